#pragma once
// The memory floor of a decode step, as bench_step and bench_cycle report it
// (issue 7's measure): the bytes a step must read, the target's weights once
// and the K/V its attention reads, over the device-to-device copy bandwidth
// the program measures in the same run. A step at the floor would do
// nothing but stream those bytes at copy speed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "io/model_config.h"
#include "ops/backend.h"

namespace flashdraft::bench {

// The median of `reps` timed calls of `step`, in ms, each ending in a
// synchronize, after 3 warm-ups (lazily made descriptors, caches).
template <class F>
double median_ms(ops::Backend& be, int reps, F&& step) {
  for (int i = 0; i < 3; ++i) step();
  be.synchronize();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    be.synchronize();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Bytes per second of a 1 GiB device-to-device copy (read + write counted).
inline double copy_bandwidth(ops::Backend& be) {
  const auto dt = be.activation_dtype();
  const int64_t n = (int64_t{1} << 30) / static_cast<int64_t>(ops::dtype_size(dt));
  auto a = be.alloc_tensor(dt, n / 4096, 4096);
  auto b = be.alloc_tensor(dt, n / 4096, 4096);
  be.fill_uniform(a.t, 1, -1, 1);
  const double ms = median_ms(be, 10, [&] { be.copy(a.t, b.t); });
  return 2.0 * static_cast<double>(int64_t{1} << 30) / (ms * 1e-3);
}

// The weight bytes a decode step reads: every layer's projections and norms,
// the final norm and the lm head (the embedding is gathered a few rows at a
// time, not read whole, so only the head counts).
inline int64_t weight_bytes(const io::ModelConfig& c, int64_t dtype_size) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const int64_t q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
  const int64_t layer = H * (q + 2 * kv) + q * H + 3 * H * I + 2 * H + (c.qk_norm ? 2 * hd : 0);
  return (c.num_hidden_layers * layer + H + c.vocab_size * H) * dtype_size;
}

// The K and V bytes a decode step's attention reads: `batch` sequences of `ctx` keys, every layer.
inline double kv_bytes(const io::ModelConfig& c, int64_t batch, int64_t ctx, int64_t dtype_size) {
  return static_cast<double>(batch) * static_cast<double>(ctx) * 2.0 * static_cast<double>(c.num_hidden_layers) *
         static_cast<double>(c.num_key_value_heads * c.head_dim * dtype_size);
}

}  // namespace flashdraft::bench
