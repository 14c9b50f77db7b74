#include "ops/cpu/matmul_small.h"

#include <algorithm>
#include <cmath>

#include "ops/cpu/matmul_small_kernel.h"
#include "ops/cpu/worker_pool.h"
#include "ops/ops.h"

namespace flashdraft::ops::cpu {
namespace {

// Portable fallback for non-x86 builds: one lane, explicit fma, so the
// compiler cannot contract some dot products and not others.
struct Scalar {
  using Vec = float;
  static constexpr int kLanes = 1;
  static constexpr int kRows = 4, kOuts = 2, kOutsOneRow = 4;
  static Vec zero() { return 0.0f; }
  static Vec load(const float* p) { return *p; }
  static Vec madd(Vec a, Vec b, Vec acc) { return std::fma(a, b, acc); }
  static float hsum(Vec v) { return v; }
  static float madd1(float a, float b, float s) { return std::fma(a, b, s); }
};

using Kernel = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);

struct Choice {
  Kernel kernel;
  const char* isa;
};

// Decided once: a process never mixes two builds whose roundings differ
// (fused vs separate multiply-add, 8 lanes vs 4).
Choice choose() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    // Same bits as avx2-fma (matmul_small_avx512.cpp), so this is no second build to mix.
    if (__builtin_cpu_supports("avx512f")) return {detail::matmul_small_avx512, "avx512f"};
    return {detail::matmul_small_avx2, "avx2-fma"};
  }
  return {detail::matmul_small_sse, "sse2"};
#else
  return {matmul_rows<Scalar>, "generic"};
#endif
}

// A function-local static, so a matmul run by another static initializer
// still finds it set.
const Choice& chosen() {
  static const Choice c = choose();
  return c;
}

// Below this many multiply-adds per thread (about 10 us of one core's work),
// handing half of a call to a pool thread costs more than it saves.
constexpr int64_t kMinMaddsPerThread = int64_t{1} << 17;

}  // namespace

void matmul_small(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in, int64_t out) {
  const Kernel kernel = chosen().kernel;
  const int64_t work = n * in * out;
  const int64_t threads = std::min<int64_t>({num_threads(), work / kMinMaddsPerThread, out / 16});
  if (threads <= 1) return kernel(x, w, bias, y, n, in, out, out);
  // Each task takes a contiguous range of outputs, a multiple of 16 wide.
  // Splitting changes which dot products share a register block, never how
  // one is computed, so the bits do not depend on the thread count.
  const int64_t per = (out / threads + 15) / 16 * 16;
  const int64_t tasks = (out + per - 1) / per;
  run_tasks(tasks, [&](int64_t t) {
    const int64_t o0 = t * per;
    kernel(x, w + o0 * in, bias ? bias + o0 : nullptr, y + o0, n, in, std::min(per, out - o0), out);
  });
}

const char* matmul_small_isa() { return chosen().isa; }

}  // namespace flashdraft::ops::cpu
