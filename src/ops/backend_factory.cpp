#include "ops/backend_factory.h"

#include "core/error.h"
#ifdef FLASHDRAFT_HAVE_CUDA
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/device.h"
#endif

namespace flashdraft::ops {

bool cuda_available() {
#ifdef FLASHDRAFT_HAVE_CUDA
  return cuda::device_count() > 0;
#else
  return false;
#endif
}

std::shared_ptr<Backend> make_backend(const std::string& device) {
  if (device == "cpu") return make_cpu_backend();
  if (device == "auto") return cuda_available() ? make_backend("cuda") : make_cpu_backend();
  if (device != "cuda") throw Error("unknown device '" + device + "': expected cpu, cuda or auto");
#ifdef FLASHDRAFT_HAVE_CUDA
  if (cuda::device_count() == 0)
    throw Error("--device cuda: no CUDA GPU is visible on this machine (use --device cpu)");
  return cuda::make_cuda_backend(0);
#else
  throw Error("--device cuda: this build of flashdraft has no CUDA backend (nvcc was not found at build time)");
#endif
}

}  // namespace flashdraft::ops
