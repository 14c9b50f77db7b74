// Throughput of the paged, batched target forward on the CPU: our floor for
// plain and DFlash decoding on the shipped 12.6M-parameter target.
// Usage: bench_model [benchmark flags]; FD_MODEL_DIR overrides the model
// directory (default: models/target of this source tree). OpenBLAS uses
// OPENBLAS_NUM_THREADS threads (default: all cores).
//
// Each request holds `context` committed tokens; an iteration runs one step:
//   Decode/S/C   one row for each of S requests (plain decoding, batch S)
//   Verify/S/C   16 rows for each of S requests (a DFlash verify, block 16)
//   Prefill/1/C  one chunk of C rows of a fresh request
// tokens/s counts rows run. The step re-runs the same positions each
// iteration (their K/V slots are simply rewritten), so context stays fixed.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "ops/ops.h"

namespace {

using namespace flashdraft;

std::filesystem::path model_dir() {
  if (const char* env = std::getenv("FD_MODEL_DIR")) return env;
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "models" / "target";
}

model::Qwen3Model& target() {
  static const auto m = [] {
    const auto dir = model_dir();
    return model::Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir));
  }();
  return *m;
}

constexpr int64_t kBlock = 16;

// Runs `rows` new rows for each of `seqs` requests that already hold `context`
// tokens (prefilled once, outside the timing).
void run_step(benchmark::State& state, int64_t seqs, int64_t rows, int64_t context, bool all_logits) {
  auto& m = target();
  const int64_t len = context + rows, blocks_per_seq = (len + kBlock - 1) / kBlock;
  model::KVPool pool(m.backend(), seqs * blocks_per_seq, kBlock, m.kv_layers());
  // Interleaved block ids, as a busy engine hands them out.
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(seqs));
  for (int64_t b = 0; b < blocks_per_seq; ++b)
    for (int64_t s = 0; s < seqs; ++s) tables[s].push_back(static_cast<int32_t>(b * seqs + s));
  std::mt19937 gen(1);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(m.config().vocab_size - 1));
  std::vector<float> logits;

  model::BatchContext step;
  std::vector<int32_t> ids;
  for (int64_t s = 0; s < seqs; ++s) {
    if (context > 0) {
      std::vector<int32_t> prompt(static_cast<size_t>(context));
      for (auto& t : prompt) t = tok(gen);
      model::BatchContext pre{{model::SeqSlice{0, context, 0, tables[s], false}}};
      m.forward_batch(prompt, pre, pool, logits);
    }
    step.seqs.push_back(model::SeqSlice{s * rows, rows, context, tables[s], all_logits});
    for (int64_t r = 0; r < rows; ++r) ids.push_back(tok(gen));
  }
  for (auto _ : state) {
    m.forward_batch(ids, step, pool, logits);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(seqs * rows), benchmark::Counter::kIsIterationInvariantRate);
}

void Decode(benchmark::State& state) { run_step(state, state.range(0), 1, state.range(1), true); }
void Verify(benchmark::State& state) { run_step(state, state.range(0), 16, state.range(1), true); }
void Prefill(benchmark::State& state) { run_step(state, 1, state.range(1), 0, false); }

// The attention op alone, shaped like the target's layers (6 heads on 2 kv
// heads of 64): `seqs` requests of `rows` new rows after `context` tokens.
void PagedAttention(benchmark::State& state) {
  const int64_t seqs = state.range(0), rows = state.range(1), context = state.range(2);
  const int64_t nh = 6, nkv = 2, hd = 64, len = context + rows, per_seq = (len + kBlock - 1) / kBlock;
  std::mt19937 gen(2);
  std::normal_distribution<float> d;
  std::vector<float> k(seqs * per_seq * kBlock * nkv * hd), v(k.size()), q(seqs * rows * nh * hd), out(q.size());
  for (auto* a : {&k, &v, &q})
    for (float& x : *a) x = d(gen);
  std::vector<int32_t> table(static_cast<size_t>(seqs * per_seq));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), gen);
  std::vector<ops::cpu::PagedSeq> batch;
  for (int64_t s = 0; s < seqs; ++s) batch.push_back({s * rows, rows, context, table.data() + s * per_seq});
  for (auto _ : state) {
    ops::cpu::paged_attention(q.data(), nh * hd, k.data(), v.data(), out.data(), nh * hd, batch.data(), seqs, kBlock, nh,
                              nkv, hd, 0.125f, /*causal=*/true, /*window=*/0);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(seqs * rows), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(PagedAttention)
    ->ArgNames({"seqs", "rows", "context"})
    ->Args({1, 1, 256})
    ->Args({8, 1, 256})
    ->Args({8, 16, 256})
    ->Args({1, 256, 0})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(Decode)
    ->ArgNames({"seqs", "context"})
    ->Args({1, 256})
    ->Args({8, 256})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(Verify)
    ->ArgNames({"seqs", "context"})
    ->Args({1, 256})
    ->Args({8, 256})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(Prefill)->ArgNames({"seqs", "rows"})->Args({1, 256})->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
