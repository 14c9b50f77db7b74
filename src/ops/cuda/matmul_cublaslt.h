#pragma once
// y = x · w^T (+ bias) through cuBLASLt, with per-shape plans cached so that
// steady decoding never re-runs the algorithm heuristic.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

class CublasLtMatmul {
 public:
  // Creates the cuBLASLt handle and a `workspace_bytes` device workspace.
  explicit CublasLtMatmul(size_t workspace_bytes);
  ~CublasLtMatmul();
  CublasLtMatmul(const CublasLtMatmul&) = delete;
  CublasLtMatmul& operator=(const CublasLtMatmul&) = delete;

  // x [n, in] bf16, w [out, in] bf16, bias [1, out] (bf16 or f32, optional),
  // y [n, out] bf16 or f32; any row strides. Enqueued on `stream`; the
  // workspace is shared, so calls must share one stream.
  void run(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashdraft::ops::cuda
