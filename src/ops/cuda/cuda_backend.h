#pragma once
// The CUDA backend: bf16 weights, activations and KV pool, f32 accumulation,
// GEMMs through cuBLASLt, every other op one kernel file in this folder.
#include <memory>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

// Throws flashdraft::Error when there is no usable device `index`.
std::unique_ptr<Backend> make_cuda_backend(int index = 0);

}  // namespace flashdraft::ops::cuda
