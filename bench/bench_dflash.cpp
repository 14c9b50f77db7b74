// Plain vs DFlash decoding on the CPU: tokens/s and tau over HumanEval
// prompts, for each shipped drafter at several concurrencies. Prints a
// markdown table. Not a test: numbers depend on the machine.
//
//   build/bench/bench_dflash [--models DIR] [--prompts FILE] [--limit N]
//                            [--max-tokens N] [--concurrency 1,8] [--tensor-parallel-size N]
//                            [--num-speculative-tokens K]  (default: block_size - 1)
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_args.h"
#include "engine/llm_engine.h"
#include "serving/engine_builder.h"

using namespace flashdraft;

namespace {

struct Row {
  std::string method;
  int64_t concurrency = 0, prompts = 0, tokens = 0, steps = 0;
  double seconds = 0, tau = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string models = FD_SOURCE_DIR "/models";
  std::string prompts_file = FD_SOURCE_DIR "/tests/fixtures/engine/humaneval.jsonl";
  int64_t limit = 0, max_tokens = 128, k = -1;
  std::vector<int64_t> concurrency = {1, 8};
  int tensor_parallel_size = 1;
  const bool flags_ok = bench::parse_flags("bench_dflash", argc, argv, [&](const std::string& flag,
                                                                           const std::string& value) {
    if (flag == "--models")
      models = value;
    else if (flag == "--prompts")
      prompts_file = value;
    else if (flag == "--limit")
      limit = std::stoll(value);
    else if (flag == "--max-tokens")
      max_tokens = std::stoll(value);
    else if (flag == "--num-speculative-tokens")
      k = std::stoll(value);
    else if (flag == "--concurrency")
      concurrency = bench::parse_list(value);
    else if (flag == "--tensor-parallel-size")
      tensor_parallel_size = std::stoi(value);
    else
      return false;
    return true;
  });
  if (!flags_ok) return 2;
  try {
    // One target for every run; the engine (and its KV pool) is rebuilt per
    // method and concurrency by the same builder `generate` uses.
    serving::ModelFiles files = serving::read_model_files(models + "/target");
    serving::EngineOptions options;
    options.device = "cpu";
    options.tensor_parallel_size = tensor_parallel_size;  // thread ranks (README "Tensor parallelism")
    auto target = serving::load_target(files, options, stderr);
    const tokenizer::Tokenizer& tok = files.tokenizer;
    std::map<std::string, std::unique_ptr<model::DFlashDrafter>> drafters;
    for (const char* name : {"drafter-full", "drafter-swa"}) {
      serving::EngineOptions d = options;
      d.speculative.draft_model = models + "/" + name;
      drafters[name] = serving::load_drafter(d, *target, stderr);
    }

    std::vector<std::vector<int32_t>> prompts;
    std::ifstream in(prompts_file);
    std::string line;
    while (std::getline(in, line) && (limit == 0 || static_cast<int64_t>(prompts.size()) < limit)) {
      if (line.empty()) continue;
      prompts.push_back(tok.encode(nlohmann::json::parse(line).at("prompt").get<std::string>(), false));
    }
    size_t longest = 0;
    for (const auto& p : prompts) longest = std::max(longest, p.size());

    std::vector<Row> rows;
    for (int64_t c : concurrency) {
      for (const char* method : {"plain", "drafter-full", "drafter-swa"}) {
        model::DFlashDrafter* d = std::strcmp(method, "plain") == 0 ? nullptr : drafters[method].get();
        serving::EngineOptions o = options;
        o.max_num_seqs = c;
        o.positions_per_seq = static_cast<int64_t>(longest) + max_tokens;
        if (d && k > 0) o.speculative.num_speculative_tokens = static_cast<int>(k);
        auto engine = serving::make_engine(*target, d, o, files.eos, stderr);
        engine::Engine& eng = *engine;
        engine::SamplingParams params;
        params.temperature = 0;
        params.max_tokens = static_cast<int>(max_tokens);
        const auto start = std::chrono::steady_clock::now();
        std::vector<engine::RequestId> ids;
        for (const auto& p : prompts) ids.push_back(eng.add(p, params));
        while (eng.has_work()) eng.step();
        Row r;
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        r.method = method;
        r.concurrency = c;
        r.prompts = static_cast<int64_t>(prompts.size());
        for (auto id : ids) r.tokens += static_cast<int64_t>(eng.result(id).tokens.size());
        r.tau = eng.stats().tau();
        r.steps = eng.steps();
        rows.push_back(r);
        fmt::print(stderr, "{} at concurrency {}: {:.1f} tok/s\n", method, c, r.tokens / r.seconds);
      }
    }
    fmt::print("| method | concurrency | prompts | new tokens | engine steps | seconds | tok/s | tau | speedup |\n");
    fmt::print("|---|---|---|---|---|---|---|---|---|\n");
    for (const Row& r : rows) {
      double plain = 0;
      for (const Row& p : rows) {
        if (p.method == "plain" && p.concurrency == r.concurrency) plain = p.tokens / p.seconds;
      }
      fmt::print("| {} | {} | {} | {} | {} | {:.1f} | {:.1f} | {} | {:.2f}x |\n", r.method, r.concurrency, r.prompts,
                 r.tokens, r.steps, r.seconds, r.tokens / r.seconds,
                 r.method == "plain" ? std::string("-") : fmt::format("{:.2f}", r.tau), r.tokens / r.seconds / plain);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_dflash: {}\n", e.what());
    return 1;
  }
  return 0;
}
