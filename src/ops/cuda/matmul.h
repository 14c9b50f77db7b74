#pragma once
// The CUDA backend's matmul: y = x · w^T (+ bias) through the batch-invariant
// GEMM kernels (gemm_tiles.h). Picks a tile shape and split mode per call from
// the row count; the slice length (the only arithmetic choice) comes from the
// weight's shape alone, so a row's result never depends on the batch.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/backend.h"
#include "ops/cuda/gemm_tiles.h"

namespace flashdraft::ops::cuda {

class Matmul {
 public:
  // For the current device.
  Matmul();

  struct Choice {
    GemmTile tile = GemmTile::Rows16;
    bool split = false;  // one block per slice, a cluster per output tile
  };
  // What run() uses for m rows of a [n, k] weight; `bf16_tiles`: the weight
  // is tiled bf16 (Layout::MatmulTiles or GluTiles, not WeightQuant::Fp8,
  // whose codes only Rows16 streams), which the 64-row wgmma tile reads.
  Choice choose(int64_t m, int64_t n, int64_t k, bool bf16_tiles = true) const;
  int slice(int64_t n, int64_t k) const { return gemm_slice(n, k, sms_); }

  // x [m, k] bf16, w [n, k] bf16, bias [1, n] (bf16 or f32, optional), y [m, n]
  // bf16 or f32. x's and w's rows must be 16-byte aligned (k, ld multiples of
  // 8); y any stride. Enqueued on `stream`. `force` (tests, benches)
  // overrides the choice.
  void run(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, cudaStream_t stream,
           const Choice* force = nullptr);
  // run() with rope_store_kv's work done by the split fold (gemm_tiles.h,
  // RopeEpilogue) where the call runs split 16- or 64-row blocks over a
  // tiled weight into bf16 y (decode and verify rows): returns false, having
  // enqueued nothing, where it does not.
  bool run_rope(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, const RopeEpilogue& rope,
                cudaStream_t stream);
  // silu_glu(x · w^T) straight into out [m, w.rows / 2] by the split fold,
  // for a Layout::GluTiles w where the call runs split 16- or 64-row blocks:
  // false, having enqueued nothing, elsewhere.
  bool run_glu(const Tensor& x, const Tensor& w, const Tensor& out, cudaStream_t stream);

 private:
  // y must be [x.rows, y_cols] (w.rows; half of it for run_glu's out).
  GemmArgs checked_args(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, int64_t y_cols) const;
  int sms_ = 0;
};

}  // namespace flashdraft::ops::cuda
