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

int cuda_device_count() {
#ifdef FLASHDRAFT_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
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

std::vector<std::shared_ptr<Backend>> make_rank_backends(const std::string& device, int ranks) {
  std::vector<std::shared_ptr<Backend>> out;
  if (device == "cpu") {
    for (int r = 0; r < ranks; ++r) out.push_back(make_cpu_backend());
    return out;
  }
  if (device != "cuda") throw Error("unknown device '" + device + "': expected cpu or cuda");
#ifdef FLASHDRAFT_HAVE_CUDA
  if (cuda::device_count() < ranks)
    throw Error("--tensor-parallel-size " + std::to_string(ranks) + ": needs " + std::to_string(ranks) + " GPUs, " +
                std::to_string(cuda::device_count()) + " visible");
  // Made last to first: each makes its GPU the thread's current one, and
  // the caller goes on with rank 0's.
  out.resize(static_cast<size_t>(ranks));
  for (int r = ranks - 1; r >= 0; --r) out[static_cast<size_t>(r)] = cuda::make_cuda_backend(r);
  return out;
#else
  throw Error("--device cuda: this build of flashdraft has no CUDA backend (nvcc was not found at build time)");
#endif
}

}  // namespace flashdraft::ops
