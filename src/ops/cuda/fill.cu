#include <algorithm>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 256;

__host__ __device__ inline uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
__device__ inline T round_down(float x);
template <>
__device__ inline float round_down<float>(float x) {
  return x;
}
template <>
__device__ inline bf16 round_down<bf16>(float x) {
  return __float2bfloat16_rd(x);
}
template <>
__device__ inline __half round_down<__half>(float x) {
  return __float2half_rd(x);
}

// Counter-based: element (r, c) draws from splitmix64 of (seed, r * cols + c),
// so a tensor's values depend on the seed and its shape only, never on the
// launch geometry or its row stride: dummy weights are reproducible run to
// run without a host copy. 24 random bits give a uniform float in [0, 1).
// Rounding to T could land on hi; then the value is rounded down instead.
template <class T>
__global__ void fill_uniform_kernel(T* t, int64_t ld, int64_t rows, int64_t cols, uint64_t key, float lo, float hi) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const uint64_t bits = splitmix64(key + static_cast<uint64_t>(r * cols + c) * 0x9e3779b97f4a7c15ull);
    const float u = static_cast<float>(bits >> 40) * 0x1p-24f;
    const float x = fminf(lo + (hi - lo) * u, hi);
    T v = from_float<T>(x);
    if (to_float(v) >= hi) v = round_down<T>(x);
    t[r * ld + c] = v;
  }
}

template <class T>
void launch(const Tensor& t, uint64_t key, float lo, float hi, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((t.cols + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min<int64_t>(t.rows, 65535)));
  fill_uniform_kernel<T><<<grid, kThreads, 0, stream>>>(t.as<T>(), t.ld, t.rows, t.cols, key, lo, hi);
}

}  // namespace

// All-ones bytes are a NaN in f32, bf16 and f16 alike (exponent all ones,
// mantissa non-zero), so a pitched memset poisons any float view.
void fill_nan(const Tensor& t, cudaStream_t stream) {
  expect_float_tensor(t, "fill_nan", "t");
  if (t.empty()) return;
  const size_t es = dtype_size(t.dtype);
  if (t.contiguous()) {
    check(cudaMemsetAsync(t.data, 0xff, static_cast<size_t>(t.numel()) * es, stream), "fill_nan cudaMemsetAsync");
  } else {
    check(cudaMemset2DAsync(t.data, static_cast<size_t>(t.ld) * es, 0xff, static_cast<size_t>(t.cols) * es,
                            static_cast<size_t>(t.rows), stream),
          "fill_nan cudaMemset2DAsync");
  }
}

void fill_uniform(const Tensor& t, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  expect_float_tensor(t, "fill_uniform", "t");
  if (!(lo < hi)) fail("fill_uniform", "needs lo < hi");
  if (t.empty()) return;
  // Seeds 0, 1, 2... are mixed first so neighbouring seeds give unrelated streams.
  const uint64_t key = splitmix64(seed + 0x632be59bd9b4e019ull);
  switch (t.dtype) {
    case DType::F32:
      launch<float>(t, key, lo, hi, stream);
      break;
    case DType::BF16:
      launch<bf16>(t, key, lo, hi, stream);
      break;
    default:
      launch<__half>(t, key, lo, hi, stream);
      break;
  }
  check(cudaGetLastError(), "fill_uniform kernel launch");
}

}  // namespace flashdraft::ops::cuda
