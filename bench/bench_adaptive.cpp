// Plain decoding vs DFlash at a fixed draft length vs adaptive speculation
// (issue 10) on the shipped pair: output tokens/s at each concurrency over
// the HumanEval prompts, greedy, plus one long-context point (prompts padded
// with earlier HumanEval prompts to --long-context tokens). At each point the
// three methods run back to back, in an order that rotates from point to
// point, so that a machine whose speed drifts favours none of them. With
// --repeats N each point runs N rounds of the three (the order rotating
// again), and the table shows each method's median with its spread;
// --long-repeats N (default: --repeats) gives the long-context point its own
// count: on a GPU its runs take a tenth of a second each and spread by ±5%,
// so it needs more rounds than the HumanEval points for the same certainty,
// and they cost little.
// Start-up (graph capture, adaptive's calibration) is not in tokens/s, as a
// server pays it once; the table lists adaptive's calibration time.
//
// Prints a markdown table and writes one CSV line per run (--csv FILE) for
// bench/plot_adaptive.py. Not a test: numbers depend on the machine.
//
//   build/bench/bench_adaptive [--device cpu|cuda] [--models DIR] [--prompts FILE] [--limit N]
//       [--max-tokens N] [--concurrency 1,2,4,8,16] [--drafter drafter-full] [--num-speculative-tokens 15]
//       [--long-context 1900] [--long-concurrency 4] [--long-limit 16] [--repeats 1] [--long-repeats N]
//       [--max-num-batched-tokens 512] [--points humaneval,long] [--csv FILE]
//
// --points long runs the long-context point alone (a quick check of it, at
// --long-concurrency, with enough --repeats to see through the noise of
// sub-second runs on a GPU).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench_args.h"
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string models = FD_SOURCE_DIR "/models", drafter_name = "drafter-full", csv, device = "cpu";
  std::string prompts_file = FD_SOURCE_DIR "/../shared/datasets/humaneval.jsonl";
  int64_t limit = 0, max_tokens = 64, k = 15, long_context = 1900, long_concurrency = 4, long_limit = 16;
  int64_t repeats = 1, long_repeats = 0, batched_tokens = 512;
  bool humaneval_point = true, long_point = true;
  std::vector<int64_t> concurrency = {1, 2, 4, 8, 16};
  const bool flags_ok = bench::parse_flags("bench_adaptive", argc, argv, [&](const std::string& flag,
                                                                             const std::string& value) {
    if (flag == "--models") models = value;
    else if (flag == "--prompts") prompts_file = value;
    else if (flag == "--limit") limit = std::stoll(value);
    else if (flag == "--max-tokens") max_tokens = std::stoll(value);
    else if (flag == "--concurrency") concurrency = bench::parse_list(value);
    else if (flag == "--drafter") drafter_name = value;
    else if (flag == "--num-speculative-tokens") k = std::stoll(value);
    else if (flag == "--long-context") long_context = std::stoll(value);
    else if (flag == "--long-concurrency") long_concurrency = std::stoll(value);
    else if (flag == "--long-limit") long_limit = std::stoll(value);
    else if (flag == "--csv") csv = value;
    else if (flag == "--device") device = value;
    else if (flag == "--repeats") repeats = std::max<int64_t>(1, std::stoll(value));
    else if (flag == "--long-repeats") long_repeats = std::max<int64_t>(1, std::stoll(value));
    else if (flag == "--max-num-batched-tokens") batched_tokens = std::stoll(value);
    else if (flag == "--points") {
      humaneval_point = value.find("humaneval") != std::string::npos;
      long_point = value.find("long") != std::string::npos;
      if (!humaneval_point && !long_point) return false;
    }
    else return false;
    return true;
  });
  if (!flags_ok) return 2;
  try {
    serving::ModelFiles files = serving::read_model_files(models + "/target");
    serving::EngineOptions options;
    options.device = device;
    options.max_num_batched_tokens = batched_tokens;
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
    std::vector<std::pair<size_t, size_t>> point_runs;  // each point's first run and run count
    auto run_point = [&](const std::string& point, int64_t c, const std::vector<std::vector<int32_t>>& ps,
                         size_t rotation, int64_t rounds) {
      size_t longest = 0;
      for (const auto& p : ps) longest = std::max(longest, p.size());
      point_runs.emplace_back(runs.size(), methods.size() * static_cast<size_t>(rounds));
      for (size_t m = 0; m < methods.size() * static_cast<size_t>(rounds); ++m) {
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
        fmt::print(stderr, "{} c={} {}: {:.1f} tok/s ({} tokens, {:.1f} s, {} steps, {} met a graph first, "
                   "calibration {:.0f} ms){}\n", point, c, method, r.tok_s(), r.tokens, r.seconds, engine->steps(),
                   engine->recording_steps(), r.calibration_ms,
                   dr ? fmt::format(", tau {:.2f}, {}", r.tau, engine->stats().lengths_summary()) : std::string());
        if (method == "adaptive") fmt::print(stderr, "  step costs: {}\n", engine->step_costs()->describe());
        if (dr) {
          const engine::ContextWrites& w = engine->context_writes();
          fmt::print(stderr, "  drafter context: {} rows in {} writes; {} rows set aside to wait, {} never written\n",
                     w.rows, w.writes, w.set_aside, w.set_aside - w.caught_up);
        }
      }
    };
    size_t rotation = 0;
    if (humaneval_point)
      for (int64_t c : concurrency) run_point("humaneval", c, prompts, rotation++, repeats);
    if (long_point && long_limit > 0)
      run_point("long", long_concurrency, long_prompts, rotation++, long_repeats > 0 ? long_repeats : repeats);

    // Medians per point and method; the spread is (max - min) / median.
    fmt::print("| point | concurrency | plain tok/s | fixed-{} tok/s | adaptive tok/s | adaptive / best | mean draft length | "
               "calibration ms |\n",
               k);
    fmt::print("|---|---|---|---|---|---|---|---|\n");
    for (const auto& [i, per_point] : point_runs) {
      const bool spread = per_point > 3;
      double by[3] = {0, 0, 0}, range[3] = {0, 0, 0};
      double mean = 0, calibration = 0;
      for (size_t m = 0; m < 3; ++m) {
        std::vector<double> t, d, cal;
        for (size_t j = i; j < i + per_point; ++j)
          if (runs[j].method == methods[m]) {
            t.push_back(runs[j].tok_s());
            d.push_back(runs[j].mean_draft);
            cal.push_back(runs[j].calibration_ms);
          }
        by[m] = median(t);
        range[m] = (*std::max_element(t.begin(), t.end()) - *std::min_element(t.begin(), t.end())) / by[m];
        if (m == 2) mean = median(d), calibration = median(cal);
      }
      auto cell = [&](size_t m) {
        return spread ? fmt::format("{:.1f} ±{:.0f}%", by[m], 50 * range[m]) : fmt::format("{:.1f}", by[m]);
      };
      const std::string point =
          runs[i].point == "long" ? fmt::format("long ({} tokens)", runs[i].context) : std::string("HumanEval");
      fmt::print("| {} | {} | {} | {} | {} | {:.2f}x | {:.1f} | {:.0f} |\n", point, runs[i].concurrency, cell(0),
                 cell(1), cell(2), by[2] / std::max(by[0], by[1]), mean, calibration);
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
