#include "cli/generate_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>

#include "cli/batch_generate.h"
#include "cli/chat_prompt.h"
#include "cli/sampling_setup.h"
#include "cli/terminal.h"
#include "cli/token_ids_json.h"
#include "core/error.h"
#include "engine/generation_result.h"
#include "engine/llm_engine.h"
#include "serving/engine_builder.h"
#include "serving/model_dir.h"
#include "serving/text_output.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::cli {
namespace {

template <typename T>
std::optional<T> if_given(const CLI::Option* option, T value) {
  return option->count() > 0 ? std::optional<T>(value) : std::nullopt;
}

std::string read_prompt_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("--prompt-file {}: cannot open the file", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void check_batch_flags(const GenerateOptions& o) {
  if (o.prompt_option->count() > 0 || o.prompt_file_option->count() > 0 || o.prompt_ids_option->count() > 0)
    throw UsageError(
        "--prompts-file runs the prompts of a file; do not combine it with --prompt, --prompt-file "
        "or --prompt-ids");
  if (o.seed_option->count() > 0 && o.seed < 0) throw UsageError(fmt::format("--seed: must be >= 0, got {}", o.seed));
  if (!o.chat && o.system_option->count() > 0)
    throw UsageError("--system needs --chat (the system message goes into the chat template)");
  if (!o.chat && o.no_think) throw UsageError("--no-think needs --chat (it is an option of the chat template)");
}

void check_prompt_source(const GenerateOptions& o) {
  if (o.engine.max_num_seqs_option->count() > 0 || o.output_option->count() > 0)
    throw UsageError(
        "--concurrency (--max-num-seqs) and --output belong to batch mode; they need --prompts-file FILE");
  int given = static_cast<int>(o.prompt_option->count() > 0) + static_cast<int>(o.prompt_file_option->count() > 0) +
              static_cast<int>(o.prompt_ids_option->count() > 0);
  if (given != 1)
    throw UsageError("generate needs exactly one of --prompt TEXT, --prompt-file FILE, --prompt-ids JSON");
  if (!o.chat) {
    if (o.system_option->count() > 0)
      throw UsageError("--system needs --chat (the system message goes into the chat template)");
    if (o.no_think) throw UsageError("--no-think needs --chat (it is an option of the chat template)");
  } else if (o.prompt_ids_option->count() > 0) {
    throw UsageError("--chat cannot wrap --prompt-ids; give the text with --prompt or --prompt-file");
  }
  if (o.seed_option->count() > 0 && o.seed < 0) throw UsageError(fmt::format("--seed: must be >= 0, got {}", o.seed));
}

// The prompt as given: text (from --prompt or --prompt-file), or ids.
struct PromptInput {
  std::optional<std::string> text;
  std::string ids_json;
};

PromptInput read_prompt(const GenerateOptions& o) {
  if (o.prompt_ids_option->count() > 0) return {std::nullopt, o.prompt_ids};
  return {o.prompt_option->count() > 0 ? o.prompt : read_prompt_file(o.prompt_file), ""};
}

std::vector<int32_t> prompt_tokens(const GenerateOptions& o, const PromptInput& input,
                                   const serving::ModelFiles& model) {
  const tokenizer::Tokenizer& tok = model.tokenizer;
  if (!input.text) {
    std::vector<int32_t> ids = parse_token_ids(input.ids_json, "--prompt-ids", tok.vocab_size());
    if (ids.empty()) throw UsageError("--prompt-ids: the prompt is empty; the model needs a token to continue from");
    return ids;
  }
  std::string text = *input.text;
  const char* flag = o.prompt_option->count() > 0 ? "--prompt" : "--prompt-file";
  if (o.chat) text = render_chat_prompt(model, if_given(o.system_option, o.system), text, !o.no_think);
  std::vector<int32_t> ids;
  try {
    // Special tokens written in the prompt count as such, as in transformers (unless --no-special).
    ids = tok.encode(text, o.special);
  } catch (const Error& e) {
    throw UsageError(fmt::format("{}: {}", flag, e.what()));  // the text itself is bad (invalid UTF-8)
  }
  if (ids.empty())
    throw UsageError(fmt::format("{}: the prompt is empty; the model needs text to continue from", flag));
  return ids;
}

std::string summary_line(const engine::GenerationResult& r, const engine::SamplingParams& params,
                         const serving::TextOutput& text, const engine::SpecStats* spec) {
  std::string stop(engine::stop_reason_name(r.stop_reason));
  if (r.stop_reason == engine::StopReason::kStopString) stop += fmt::format(" {:?}", text.stop_string());
  std::string seed = params.temperature > 0 ? fmt::format(", seed {}", *params.seed) : "";
  return fmt::format(
             "flashdraft: {} prompt tokens (prefill {:.1f} tok/s), {} generated tokens (decode {:.1f} tok/s), "
             "stop: {}{}",
             r.prompt_tokens, r.prefill_tokens_per_second(), r.tokens.size(), r.decode_tokens_per_second(), stop,
             seed) +
         (spec ? ", dflash " + spec->summary() : std::string());
}

}  // namespace

CLI::App* add_generate_command(CLI::App& app, GenerateOptions& o) {
  // Flag combinations are checked in run_generate rather than with CLI11's
  // needs()/excludes(), which would clutter the help layout.
  CLI::App* cmd = app.add_subcommand("generate", "Continue a prompt with a model, streaming the text to stdout");
  cmd->footer(
      "Sampling flags default to the model's generation_config.json (else: temperature 1, top-p 1, top-k 0,\n"
      "min-p 0). Generation ends at an end-of-sequence token (from generation_config.json, config.json or\n"
      "tokenizer_config.json), a stop string, --max-tokens, or the model's context length. A summary line\n"
      "(token counts, speeds, stop reason) goes to stderr.");
  serving::add_engine_flags(*cmd, o.engine, "--concurrency,--max-num-seqs");
  o.prompt_option = cmd->add_option("--prompt", o.prompt, "Prompt text")->type_name("TEXT");
  o.prompt_file_option =
      cmd->add_option("--prompt-file", o.prompt_file, "Read the prompt text from this file")->type_name("FILE");
  o.prompt_ids_option =
      cmd->add_option("--prompt-ids", o.prompt_ids, "The prompt as token ids, a JSON array such as '[9707,11]'")
          ->type_name("JSON");
  cmd->add_flag("--chat", o.chat,
                "Wrap the prompt in the model's chat template as a user message, "
                "ready for the assistant's answer (default: off, the prompt is used as is)");
  o.system_option =
      cmd->add_option("--system", o.system, "With --chat: a system message before the prompt (default: none)")
          ->type_name("TEXT");
  cmd->add_flag("--no-think", o.no_think,
                "With --chat: render the template with enable_thinking=false (Qwen3 answers without a "
                "<think> block; default: thinking on)");
  o.max_tokens_option = cmd->add_option("--max-tokens", o.max_tokens,
                                        fmt::format("Most tokens to generate (default: generation_config.json's "
                                                    "max_new_tokens, else {})",
                                                    kDefaultMaxTokens))
                            ->type_name("N");
  o.temperature_option =
      cmd->add_option("--temperature", o.temperature, "Sampling temperature, >= 0; 0 = greedy (default: model's)")
          ->type_name("T");
  o.top_p_option = cmd->add_option("--top-p", o.top_p, "Nucleus sampling mass in (0, 1]; 1 = off (default: model's)")
                       ->type_name("P");
  o.top_k_option =
      cmd->add_option("--top-k", o.top_k, "Sample among the K most likely tokens; 0 = off (default: model's)")
          ->type_name("K");
  o.min_p_option = cmd->add_option("--min-p", o.min_p,
                                   "Drop tokens less likely than P x the top token's probability, P in [0, 1]; "
                                   "0 = off (default: model's)")
                       ->type_name("P");
  o.presence_penalty_option =
      cmd->add_option("--presence-penalty", o.presence_penalty,
                      "Subtract P from the logit of every token already in the output, P in [-2, 2]; 0 = off "
                      "(default: 0)")
          ->type_name("P");
  o.frequency_penalty_option =
      cmd->add_option("--frequency-penalty", o.frequency_penalty,
                      "Subtract F x (times in the output) from each token's logit, F in [-2, 2]; 0 = off (default: 0)")
          ->type_name("F");
  o.repetition_penalty_option =
      cmd->add_option("--repetition-penalty", o.repetition_penalty,
                      "Divide the positive logits (multiply the negative) of tokens in the prompt or output by R > 0; "
                      "1 = off (default: model's, else 1)")
          ->type_name("R");
  o.seed_option = cmd->add_option("--seed", o.seed,
                                  "Random seed; the same seed gives the same output (default: random, printed in "
                                  "the summary)")
                      ->type_name("S");
  cmd->add_option("--stop", o.stop,
                  "Stop when the text contains STR; the stop string is not printed (repeat for several; "
                  "default: none)")
      ->type_name("STR")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--ignore-eos", o.ignore_eos,
                "Keep generating past end-of-sequence tokens, up to --max-tokens (default: off)");
  cmd->add_flag("--no-special", [&o](int64_t) { o.special = false; },
                "Read special tokens written in the prompt (e.g. <|im_start|>) as plain text; by default they "
                "become their ids, as Hugging Face tokenizers and vLLM do");
  o.prompts_file_option =
      cmd->add_option("--prompts-file", o.prompts_file,
                      "Batch mode: run every prompt of this jsonl file (HumanEval format, or {\"prompt\": ...} "
                      "lines) concurrently; prints per-request and total statistics")
          ->type_name("FILE");
  o.output_option =
      cmd->add_option("--output", o.output,
                      "Batch mode: write each completion as a jsonl line to FILE (default: statistics only)")
          ->type_name("FILE");
  return cmd;
}

void run_generate(const GenerateOptions& o) {
  // Usage mistakes first, then the model directories, then the (slow) weights.
  const bool batch = o.prompts_file_option->count() > 0;
  if (batch) {
    check_batch_flags(o);
  } else {
    check_prompt_source(o);
  }
  SamplingFlags flags;
  flags.temperature = if_given(o.temperature_option, o.temperature);
  flags.top_p = if_given(o.top_p_option, o.top_p);
  flags.top_k = if_given(o.top_k_option, o.top_k);
  flags.min_p = if_given(o.min_p_option, o.min_p);
  flags.presence_penalty = if_given(o.presence_penalty_option, o.presence_penalty);
  flags.frequency_penalty = if_given(o.frequency_penalty_option, o.frequency_penalty);
  flags.repetition_penalty = if_given(o.repetition_penalty_option, o.repetition_penalty);
  flags.max_tokens = if_given(o.max_tokens_option, o.max_tokens);
  flags.seed = if_given(o.seed_option, static_cast<uint64_t>(o.seed));
  flags.stop = o.stop;
  flags.ignore_eos = o.ignore_eos;
  check_sampling_flags(flags);
  serving::EngineOptions options = serving::engine_options(o.engine);
  if (batch) {
    run_batch(o, flags, options);
    return;
  }
  PromptInput input = read_prompt(o);
  serving::ModelFiles model = serving::read_model_files(options.model);
  engine::SamplingParams params = resolve_sampling(model.defaults, flags);
  if (!params.seed) params.seed = std::random_device{}();
  std::vector<int32_t> prompt = prompt_tokens(o, input, model);

  options.max_num_seqs = 1;
  options.positions_per_seq = static_cast<int64_t>(prompt.size()) + std::max(params.max_tokens, 1);
  serving::LoadedEngine loaded = serving::build_engine(std::move(model), options);
  engine::Engine& engine = *loaded.engine;
  serving::TextOutput text(loaded.files.tokenizer, params.stop);
  const engine::RequestId id = engine.add(prompt, params, [&](int32_t token) {
    serving::TextOutput::Delta d = text.push(token);
    write_text(d.text);
    return !d.stopped;
  });
  while (engine.has_work()) engine.step();
  write_text(text.finish().text);
  end_line_on_terminal(text.text());

  const engine::RequestResult r = engine.result(id);
  engine::GenerationResult result;
  result.tokens = r.tokens;
  result.stop_reason = r.stop;
  result.prompt_tokens = r.prompt_tokens;
  result.prefill_seconds = r.prefill_seconds;
  result.decode_seconds = r.decode_seconds;
  fmt::print(stderr, "{}\n",
             summary_line(result, params, text, loaded.drafter ? &engine.stats() : nullptr));
}

}  // namespace flashdraft::cli
