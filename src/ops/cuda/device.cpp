#include "ops/cuda/device.h"

#include <mutex>
#include <string>

#include "core/error.h"

namespace flashdraft::ops::cuda {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
  }
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" status
    return 0;
  }
  return n;
}

const DeviceLimits& device_limits(int device) {
  constexpr int kMaxDevices = 64;
  static DeviceLimits limits[kMaxDevices];
  static std::once_flag read[kMaxDevices];
  if (device < 0 || device >= kMaxDevices) throw Error("CUDA device " + std::to_string(device) + " out of range");
  std::call_once(read[device], [device] {
    DeviceLimits l;
    check(cudaDeviceGetAttribute(&l.sms, cudaDevAttrMultiProcessorCount, device), "reading the multiprocessor count");
    check(cudaDeviceGetAttribute(&l.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device),
          "reading the shared memory of a multiprocessor");
    if (l.sms <= 0 || l.smem_per_sm <= 0)
      throw Error("CUDA device " + std::to_string(device) + " reports no multiprocessors");
    limits[device] = l;
  });
  return limits[device];
}

}  // namespace flashdraft::ops::cuda
