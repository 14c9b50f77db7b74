#include "cli/batch_generate.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/chat_prompt.h"
#include "cli/prompts_file.h"
#include "core/error.h"
#include "engine/llm_engine.h"
#include "serving/text_output.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::cli {
namespace {

struct Job {
  PromptEntry entry;
  std::vector<int32_t> ids;
  std::unique_ptr<serving::TextOutput> text;
  engine::RequestId id = 0;
};

std::vector<int32_t> encode_prompt(const GenerateOptions& o, const serving::ModelFiles& model, const PromptEntry& e) {
  std::string text = e.prompt;
  if (o.chat)
    text = render_chat_prompt(model, o.system_option->count() > 0 ? std::optional(o.system) : std::nullopt, text,
                              !o.no_think);
  std::vector<int32_t> ids;
  try {
    ids = model.tokenizer.encode(text, o.special);
  } catch (const Error& e2) {
    throw UsageError(fmt::format("--prompts-file {}, {}: {}", o.prompts_file, e.name, e2.what()));
  }
  if (ids.empty()) throw UsageError(fmt::format("--prompts-file {}, {}: the prompt is empty", o.prompts_file, e.name));
  return ids;
}

double rate(double tokens, double seconds) { return seconds > 0 ? tokens / seconds : 0.0; }

}  // namespace

void run_batch(const GenerateOptions& o, const SamplingFlags& flags, serving::EngineOptions options) {
  std::vector<PromptEntry> entries = read_prompts_file(o.prompts_file);
  serving::ModelFiles model = serving::read_model_files(options.model);
  engine::SamplingParams params = resolve_sampling(model.defaults, flags);
  const uint64_t seed = params.seed ? *params.seed : std::random_device{}();

  std::vector<Job> jobs(entries.size());
  int64_t longest = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    jobs[i].entry = std::move(entries[i]);
    jobs[i].ids = encode_prompt(o, model, jobs[i].entry);
    longest = std::max<int64_t>(longest, static_cast<int64_t>(jobs[i].ids.size()));
  }
  std::ofstream out;
  if (o.output_option->count() > 0) {
    out.open(o.output, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError(fmt::format("--output {}: cannot write the file", o.output));
  }

  options.positions_per_seq = longest + std::max(params.max_tokens, 1);
  serving::LoadedEngine loaded = serving::build_engine(std::move(model), options);
  engine::Engine* engine = loaded.engine.get();
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& job = jobs[i];
    job.text = std::make_unique<serving::TextOutput>(loaded.files.tokenizer, params.stop);
    engine::SamplingParams p = params;
    p.seed = seed + i;  // each request its own stream, all reproducible from one seed
    job.id = engine->add(job.ids, p, [&job](int32_t token) { return !job.text->push(token).stopped; });
  }
  while (engine->has_work()) engine->step();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  int64_t prompt_total = 0, generated_total = 0;
  for (Job& job : jobs) {
    job.text->finish();
    const engine::RequestResult r = engine->result(job.id);
    prompt_total += r.prompt_tokens;
    generated_total += static_cast<int64_t>(r.tokens.size());
    const double elapsed = r.prefill_seconds + r.decode_seconds;
    std::string line = fmt::format(
        "{}: {} prompt tokens, {} generated tokens, {:.1f} tok/s, stop: {}", job.entry.name, r.prompt_tokens,
        r.tokens.size(), rate(static_cast<double>(r.tokens.size()), elapsed), engine::stop_reason_name(r.stop));
    if (loaded.drafter) line += fmt::format(", tau {:.2f}", r.spec.tau());
    fmt::print("{}\n", line);
    if (out) {
      nlohmann::ordered_json j = {{"task_id", job.entry.name},
                                  {"prompt", job.entry.prompt},
                                  {"completion", job.text->text()},
                                  {"prompt_tokens", r.prompt_tokens},
                                  {"generated_tokens", r.tokens.size()},
                                  {"stop", engine::stop_reason_name(r.stop)}};
      if (loaded.drafter) j["tau"] = r.spec.tau();
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    }
  }
  std::string total = fmt::format(
      "total: {} requests, {} prompt tokens, {} generated tokens in {:.2f} s ({:.1f} tok/s), concurrency {}, "
      "{} engine steps, {} preemptions",
      jobs.size(), prompt_total, generated_total, seconds, rate(static_cast<double>(generated_total), seconds),
      options.max_num_seqs, engine->steps(), engine->preemptions());
  if (loaded.drafter) total += ", dflash " + engine->stats().summary();
  if (params.temperature > 0) total += fmt::format(", seed {}", seed);
  fmt::print("{}\n", total);
  if (out) {
    out.close();
    if (!out) throw Error(fmt::format("--output {}: writing failed", o.output));
  }
}

}  // namespace flashdraft::cli
