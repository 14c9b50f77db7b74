// Backend::accept on the GPU: every row sampled by the sample kernel into
// `tokens`, then one thread per sequence compares its rows' tokens with
// their drafts. Only out ({accepted, bonus} per sequence) needs to reach the
// host.
#include <cstddef>
#include <string>

#include "ops/cuda/checks.h"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kDraftWord = offsetof(SampleRow, draft) / sizeof(int32_t);

__global__ void accept_kernel(const int32_t* __restrict__ tokens, int64_t tokens_ld, const int32_t* __restrict__ rows,
                              int64_t rows_ld, const int32_t* __restrict__ seq_start, int64_t seq_ld, int n_seqs,
                              int n_rows, int32_t* __restrict__ out) {
  const int s = blockIdx.x * kThreads + threadIdx.x;
  if (s >= n_seqs) return;
  const int begin = seq_start[s * seq_ld], end = seq_start[(s + 1) * seq_ld];
  if (begin < 0 || end > n_rows || end <= begin) {  // the caller's bug: say so in the result
    out[2 * s] = 0;
    out[2 * s + 1] = -1;
    return;
  }
  int a = 0;
  while (begin + a + 1 < end && tokens[(begin + a) * tokens_ld] == rows[(begin + a) * rows_ld + kDraftWord]) ++a;
  out[2 * s] = a;
  out[2 * s + 1] = tokens[(begin + a) * tokens_ld];
}

}  // namespace

void accept(const Tensor& logits, const Tensor& rows, const Tensor& seq_start, const Tensor& tokens, const Tensor& out,
            cudaStream_t stream) {
  expect_tensor(seq_start, DType::I32, "accept", "seq_start");
  expect_tensor(out, DType::I32, "accept", "out");
  expect_shape(seq_start, out.rows + 1, 1, "accept", "seq_start");
  expect_shape(out, out.rows, 2, "accept", "out");
  if (!out.contiguous()) fail("accept", "out must be contiguous, is " + describe(out));
  sample(logits, rows, tokens, stream);
  if (out.rows == 0) return;
  const auto n = static_cast<int>(out.rows);
  accept_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      tokens.as<int32_t>(), tokens.ld, rows.as<int32_t>(), rows.ld, seq_start.as<int32_t>(), seq_start.ld, n,
      static_cast<int>(logits.rows), out.as<int32_t>());
  check(cudaGetLastError(), "accept kernel launch");
}

}  // namespace flashdraft::ops::cuda
