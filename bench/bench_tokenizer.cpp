// Tokenizer throughput on ~1 MB of mixed text built from the parity corpus
// (code, prose, CJK, emoji, Arabic, whitespace runs, long lines).
// Usage: bench_tokenizer [benchmark flags]; FD_TOKENIZER_DIR overrides the
// tokenizer directory (default: the one the ctest fixture fetches).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/tokenizer.h"

namespace {

using flashdraft::tokenizer::IncrementalDecoder;
using flashdraft::tokenizer::Tokenizer;

constexpr size_t kTargetBytes = 1 << 20;

std::string tokenizer_dir() {
  const char* env = std::getenv("FD_TOKENIZER_DIR");
  return env ? env : FD_QWEN3_TOKENIZER_DIR;
}

const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::load(tokenizer_dir());
  return t;
}

// The corpus, one string per line joined by newlines, repeated to 1 MB.
const std::string& mixed_text() {
  static const std::string text = [] {
    std::ifstream in(std::string(FD_FIXTURES_DIR) + "/tokenizer/corpus.jsonl");
    if (!in) throw std::runtime_error("corpus.jsonl not found under " FD_FIXTURES_DIR);
    std::string corpus, line;
    while (std::getline(in, line)) corpus += nlohmann::json::parse(line)["text"].get<std::string>() + "\n";
    std::string out;
    while (out.size() < kTargetBytes) out += corpus;
    out.resize(kTargetBytes);
    // Cutting may split a character: drop the partial tail.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    return out;
  }();
  return text;
}

void report(benchmark::State& state, size_t bytes, size_t tokens) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["tokens"] = static_cast<double>(tokens);
}

// Steady state: the per-word BPE cache is warm, as in a long-running server.
void BM_EncodeWarmCache(benchmark::State& state) {
  const auto& t = tokenizer();
  const auto& text = mixed_text();
  size_t tokens = t.encode(text).size();
  for (auto _ : state) benchmark::DoNotOptimize(tokens = t.encode(text).size());
  report(state, text.size(), tokens);
}

// Every iteration starts with an empty cache, as the first request would.
void BM_EncodeColdCache(benchmark::State& state) {
  const auto& t = tokenizer();
  const auto& text = mixed_text();
  size_t tokens = 0;
  for (auto _ : state) {
    t.clear_cache();
    benchmark::DoNotOptimize(tokens = t.encode(text).size());
  }
  report(state, text.size(), tokens);
}

void BM_Decode(benchmark::State& state) {
  const auto& t = tokenizer();
  const auto ids = t.encode(mixed_text());
  size_t bytes = 0;
  for (auto _ : state) benchmark::DoNotOptimize(bytes = t.decode(ids).size());
  report(state, bytes, ids.size());
}

void BM_IncrementalDecode(benchmark::State& state) {
  const auto& t = tokenizer();
  const auto ids = t.encode(mixed_text());
  size_t bytes = 0;
  for (auto _ : state) {
    IncrementalDecoder dec(t);
    bytes = 0;
    for (int32_t id : ids) bytes += dec.push(id).size();
    bytes += dec.flush().size();
    benchmark::DoNotOptimize(bytes);
  }
  report(state, bytes, ids.size());
}

void BM_Load(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Tokenizer::load(tokenizer_dir()).vocab_size());
}

BENCHMARK(BM_EncodeWarmCache)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeColdCache)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IncrementalDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
