#include <string>

#include "core/error.h"
#include "parallel/communicator.h"
#include "parallel/thread_group.h"
#if FLASHDRAFT_HAVE_NCCL
#include "parallel/nccl_group.h"
#endif

namespace flashdraft::parallel {

std::vector<std::unique_ptr<Communicator>> make_group(const std::string& device, int size) {
  if (size < 1) throw Error("--tensor-parallel-size: must be >= 1, got " + std::to_string(size));
  if (device == "cpu") return make_thread_group(size);
  if (device == "cuda") {
#if FLASHDRAFT_HAVE_NCCL
    return make_nccl_group(size);
#else
    throw Error("--tensor-parallel-size " + std::to_string(size) +
                " on cuda: this build has no NCCL (CMake did not find nccl.h / libnccl in the CUDA toolkit)");
#endif
  }
  throw Error("--tensor-parallel-size: no collectives for device " + device);
}

}  // namespace flashdraft::parallel
