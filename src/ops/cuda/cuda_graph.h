#pragma once
// Backend::capture on CUDA: stream capture into a cudaGraph, instantiated once
// and replayed with cudaGraphLaunch (one launch for a whole forward: the host
// cost of a step stops growing with its kernel count).
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

std::unique_ptr<Graph> capture_graph(cudaStream_t stream, const std::function<void()>& work);

}  // namespace flashdraft::ops::cuda
