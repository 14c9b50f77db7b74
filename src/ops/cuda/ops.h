#pragma once
// CUDA implementations of the op interface in ops/ops.h: same signatures, but
// every pointer is device memory and work is queued on `stream` (0 = default).
// Each op has a parity test against ops::cpu in tests/cuda/.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace flashdraft::ops::cuda {

void rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t dim, float eps,
             cudaStream_t stream = 0);

void silu_glu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream = 0);

}  // namespace flashdraft::ops::cuda
