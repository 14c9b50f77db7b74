#pragma once
// NCCL collectives (CUDA builds with NCCL only): one process, one thread per
// GPU, rank r on cuda:r with its own CUDA backend; each collective goes on
// that backend's stream (Backend::native_queue), in order with its ops.
#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace flashdraft::parallel {

// Ranks 0 .. size - 1 on GPUs 0 .. size - 1, from one ncclCommInitAll.
// Sets NCCL_NVLS_ENABLE=0 unless the environment already says otherwise.
// Throws flashdraft::Error when fewer GPUs are visible or NCCL fails.
std::vector<std::unique_ptr<Communicator>> make_nccl_group(int size);

}  // namespace flashdraft::parallel
