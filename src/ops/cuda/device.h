#pragma once
// Small host-side helpers shared by the CUDA backend and its tests.
#include <cuda_runtime_api.h>

namespace flashdraft::ops::cuda {

// Throws flashdraft::Error with `what` and CUDA's message when status is not success.
void check(cudaError_t status, const char* what);

// Number of usable CUDA devices; 0 when there is no driver or no GPU (never throws),
// so CPU-only machines can skip GPU work visibly instead of failing.
int device_count();

}  // namespace flashdraft::ops::cuda
