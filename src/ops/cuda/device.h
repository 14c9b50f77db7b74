#pragma once
// Small host-side helpers shared by the CUDA ops and their tests.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace flashdraft::ops::cuda {

// Throws flashdraft::Error with `what` and CUDA's message when status is not success.
void check(cudaError_t status, const char* what);

// Number of usable CUDA devices; 0 when there is no driver or no GPU (never throws),
// so CPU-only machines can skip GPU work visibly instead of failing.
int device_count();

// Owning device allocation (cudaMalloc), moved, never copied.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace flashdraft::ops::cuda
