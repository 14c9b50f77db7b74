#pragma once
// The backend a parameterised backend test runs on: "cpu", or "cuda" where
// the test target was built with CUDA (FD_BACKEND_OPS_CUDA) and a device is
// visible; null otherwise, which the tests report as skipped.
#include <memory>
#include <string>

#include "ops/backend.h"
#ifdef FD_BACKEND_OPS_CUDA
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/device.h"
#endif

namespace flashdraft::ops::testing {

inline std::shared_ptr<Backend> backend_named(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
#ifdef FD_BACKEND_OPS_CUDA
  if (cuda::device_count() > 0) return cuda::make_cuda_backend(0);
#endif
  return nullptr;
}

}  // namespace flashdraft::ops::testing
