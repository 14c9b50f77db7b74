// Plain decoding vs DFlash at a fixed draft length vs adaptive speculation
// (issue 10) on the shipped pair: output tokens/s at each concurrency over
// the HumanEval prompts, greedy, plus one long-context point (prompts padded
// with earlier HumanEval prompts to --long-context tokens). At each point the
// three methods run back to back, in an order that rotates from point to
// point, so that a machine whose speed drifts favours none of them.
//
// Prints a markdown table and writes one CSV line per run (--csv FILE) for
// bench/plot_adaptive.py. Not a test: numbers depend on the machine.
//
//   build/bench/bench_adaptive [--models DIR] [--prompts FILE] [--limit N] [--max-tokens N]
//       [--concurrency 1,2,4,8,16] [--drafter drafter-full] [--num-speculative-tokens 15]
//       [--long-context 1900] [--long-concurrency 4] [--long-limit 16] [--csv FILE]
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/llm_engine.h"
#include "serving/engine_builder.h"

using namespace flashdraft;

namespace {

struct Run {
  std::string point, method;  // point: "humaneval" or "long"
  int64_t concurrency = 0, prompts = 0, tokens = 0, context = 0;
  double seconds = 0, tau = 0, mean_draft = 0, calibration_ms = 0;
  double tok_s() const { return static_cast<double>(tokens) / seconds; }
};

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at < s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::stoll(s.substr(at, comma - at)));
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string models = FD_SOURCE_DIR "/models", drafter_name = "drafter-full", csv;
  std::string prompts_file = FD_SOURCE_DIR "/../shared/datasets/humaneval.jsonl";
  int64_t limit = 0, max_tokens = 64, k = 15, long_context = 1900, long_concurrency = 4, long_limit = 16;
  std::vector<int64_t> concurrency = {1, 2, 4, 8, 16};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--models") models = value;
    else if (flag == "--prompts") prompts_file = value;
    else if (flag == "--limit") limit = std::stoll(value);
    else if (flag == "--max-tokens") max_tokens = std::stoll(value);
    else if (flag == "--concurrency") concurrency = parse_list(value);
    else if (flag == "--drafter") drafter_name = value;
    else if (flag == "--num-speculative-tokens") k = std::stoll(value);
    else if (flag == "--long-context") long_context = std::stoll(value);
    else if (flag == "--long-concurrency") long_concurrency = std::stoll(value);
    else if (flag == "--long-limit") long_limit = std::stoll(value);
    else if (flag == "--csv") csv = value;
    else {
      fmt::print(stderr, "bench_adaptive: unknown flag {}\n", flag);
      return 2;
    }
  }
  try {
    serving::ModelFiles files = serving::read_model_files(models + "/target");
    serving::EngineOptions options;
    options.device = "cpu";
    auto target = serving::load_target(files, options, stderr);
    serving::EngineOptions d = options;
    d.speculative.draft_model = models + "/" + drafter_name;
    auto drafter = serving::load_drafter(d, *target, stderr);
    const tokenizer::Tokenizer& tok = files.tokenizer;

    std::vector<std::vector<int32_t>> prompts;
    {
      std::ifstream in(prompts_file);
      if (!in) throw std::runtime_error("cannot open " + prompts_file);
      std::string line;
      while (std::getline(in, line) && (limit == 0 || static_cast<int64_t>(prompts.size()) < limit)) {
        if (!line.empty()) prompts.push_back(tok.encode(nlohmann::json::parse(line).at("prompt").get<std::string>(), false));
      }
    }
    // Long context: each prompt preceded by the prompts before it (code, as
    // a repository's other files would be), cut to long_context tokens.
    const int64_t context = target->config().max_position_embeddings;
    long_context = std::min(long_context, context - max_tokens - 16);
    std::vector<std::vector<int32_t>> long_prompts;
    for (size_t i = 0; i < prompts.size() && static_cast<int64_t>(long_prompts.size()) < long_limit; ++i) {
      std::vector<int32_t> p = prompts[i];
      for (size_t j = (i + prompts.size() - 1) % prompts.size(); static_cast<int64_t>(p.size()) < long_context;
           j = (j + prompts.size() - 1) % prompts.size()) {
        p.insert(p.begin(), prompts[j].begin(), prompts[j].end());
      }
      p.erase(p.begin(), p.end() - long_context);
      long_prompts.push_back(std::move(p));
    }

    const std::array<const char*, 3> methods = {"plain", "fixed", "adaptive"};
    std::vector<Run> runs;
    auto run_point = [&](const std::string& point, int64_t c, const std::vector<std::vector<int32_t>>& ps,
                         size_t rotation) {
      size_t longest = 0;
      for (const auto& p : ps) longest = std::max(longest, p.size());
      for (size_t m = 0; m < methods.size(); ++m) {
        const std::string method = methods[(m + rotation) % methods.size()];
        serving::EngineOptions o = options;
        o.max_num_seqs = c;
        o.positions_per_seq = static_cast<int64_t>(longest) + max_tokens;
        model::DFlashDrafter* dr = method == "plain" ? nullptr : drafter.get();
        if (dr) o.speculative.num_speculative_tokens = static_cast<int>(k);
        o.speculative.adaptive = method == "adaptive";
        auto engine = serving::make_engine(*target, dr, o, files.eos, nullptr);
        engine::SamplingParams params;
        params.temperature = 0;
        params.max_tokens = static_cast<int>(max_tokens);
        const auto start = std::chrono::steady_clock::now();
        std::vector<engine::RequestId> ids;
        for (const auto& p : ps) ids.push_back(engine->add(p, params));
        while (engine->has_work()) engine->step();
        Run r;
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        r.point = point;
        r.method = method;
        r.concurrency = c;
        r.prompts = static_cast<int64_t>(ps.size());
        r.context = static_cast<int64_t>(longest);
        for (auto id : ids) r.tokens += static_cast<int64_t>(engine->result(id).tokens.size());
        r.tau = engine->stats().tau();
        r.mean_draft = engine->stats().mean_draft_length();
        r.calibration_ms = engine->calibration().seconds * 1e3;
        runs.push_back(r);
        fmt::print(stderr, "{} c={} {}: {:.1f} tok/s ({} tokens, {:.1f} s, {} steps, calibration {:.0f} ms){}\n", point,
                   c, method, r.tok_s(), r.tokens, r.seconds, engine->steps(), r.calibration_ms,
                   dr ? fmt::format(", tau {:.2f}, {}", r.tau, engine->stats().lengths_summary()) : std::string());
      }
    };
    size_t rotation = 0;
    for (int64_t c : concurrency) run_point("humaneval", c, prompts, rotation++);
    if (long_limit > 0) run_point("long", long_concurrency, long_prompts, rotation++);

    fmt::print("| point | concurrency | plain tok/s | fixed-{} tok/s | adaptive tok/s | adaptive / best | mean draft length |\n", k);
    fmt::print("|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i + 2 < runs.size(); i += 3) {
      double by[3] = {0, 0, 0};
      double mean = 0;
      for (size_t j = i; j < i + 3; ++j)
        for (size_t m = 0; m < 3; ++m)
          if (runs[j].method == methods[m]) {
            by[m] = runs[j].tok_s();
            if (m == 2) mean = runs[j].mean_draft;
          }
      const std::string point =
          runs[i].point == "long" ? fmt::format("long ({} tokens)", runs[i].context) : std::string("HumanEval");
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.2f}x | {:.1f} |\n", point, runs[i].concurrency, by[0], by[1],
                 by[2], by[2] / std::max(by[0], by[1]), mean);
    }
    if (!csv.empty()) {
      std::ofstream out(csv);
      out << "point,concurrency,method,prompts,context,tokens,seconds,tok_s,tau,mean_draft_length,calibration_ms\n";
      for (const Run& r : runs) {
        out << fmt::format("{},{},{},{},{},{},{:.3f},{:.2f},{:.3f},{:.2f},{:.1f}\n", r.point, r.concurrency, r.method,
                           r.prompts, r.context, r.tokens, r.seconds, r.tok_s(), r.tau, r.mean_draft,
                           r.calibration_ms);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_adaptive: {}\n", e.what());
    return 1;
  }
  return 0;
}
