#include "ops/cpu/matmul_small.h"

#include <algorithm>
#include <cmath>
#include <system_error>
#include <thread>
#include <vector>

#include "ops/cpu/matmul_small_kernel.h"
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

// Decided once: a process never mixes two builds, whose roundings differ
// (fused vs separate multiply-add).
Choice choose() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {detail::matmul_small_avx2, "avx2-fma"};
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

// Below this many multiply-adds per thread, starting a thread (tens of us)
// costs more than it saves: decode and verify steps of small models stay on
// the calling thread; prefill chunks split.
constexpr int64_t kMinMaddsPerThread = int64_t{1} << 22;

}  // namespace

void matmul_small(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in, int64_t out) {
  const Kernel kernel = chosen().kernel;
  const int64_t work = n * in * out;
  const int64_t threads = std::min<int64_t>({num_threads(), work / kMinMaddsPerThread, out / 16});
  if (threads <= 1) return kernel(x, w, bias, y, n, in, out, out);
  // Each thread takes a contiguous range of outputs. Splitting changes which
  // dot products share a register block, never how one is computed, so the
  // bits do not depend on the thread count.
  const int64_t per = (out + threads - 1) / threads;
  std::vector<std::thread> pool;
  int64_t o0 = per;  // outputs from here on are left to this thread if a start fails
  try {
    for (; o0 < out; o0 += per)
      pool.emplace_back(kernel, x, w + o0 * in, bias ? bias + o0 : nullptr, y + o0, n, in, std::min(per, out - o0),
                        out);
  } catch (const std::system_error&) {
  }
  kernel(x, w, bias, y, n, in, std::min(per, out), out);
  if (o0 < out) kernel(x, w + o0 * in, bias ? bias + o0 : nullptr, y + o0, n, in, out - o0, out);
  for (auto& th : pool) th.join();
}

const char* matmul_small_isa() { return chosen().isa; }

}  // namespace flashdraft::ops::cpu
