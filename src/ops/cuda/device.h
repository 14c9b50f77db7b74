#pragma once
// Small host-side helpers shared by the CUDA backend and its tests.
#include <cuda_runtime_api.h>

namespace flashdraft::ops::cuda {

// Throws flashdraft::Error with `what` and CUDA's message when status is not success.
void check(cudaError_t status, const char* what);

// Number of usable CUDA devices; 0 when there is no driver or no GPU (never throws),
// so CPU-only machines can skip GPU work visibly instead of failing.
int device_count();

// What the kernels' launch choices depend on, read once per device.
struct DeviceLimits {
  int sms = 0;          // multiprocessors
  int smem_per_sm = 0;  // bytes of shared memory a multiprocessor has for its blocks
};
// Throws flashdraft::Error when `device` is not a usable device.
const DeviceLimits& device_limits(int device);

}  // namespace flashdraft::ops::cuda
