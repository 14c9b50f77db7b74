#include "cli/generate_command.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <random>

#include "cli/chat_prompt.h"
#include "cli/load_progress.h"
#include "cli/model_dir.h"
#include "cli/sampling_setup.h"
#include "cli/terminal.h"
#include "cli/text_stream.h"
#include "cli/token_ids_json.h"
#include "core/error.h"
#include "engine/generator.h"
#include "io/checkpoint.h"
#include "io/generation_config.h"
#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::cli {
namespace {

// The CPU Qwen3 model with its own KV cache, as the generation loop sees it.
class ModelLogits : public engine::NextTokenLogits {
 public:
  explicit ModelLogits(model::Qwen3Model& model) : model_(model), cache_(model.new_cache()) {}

  std::span<const float> append(std::span<const int32_t> tokens) override {
    model_.forward(tokens, cache_, logits_);
    return logits_;
  }
  int64_t context_limit() const override { return model_.config().max_position_embeddings; }

 private:
  model::Qwen3Model& model_;
  model::KVCache cache_;
  std::vector<float> logits_;
};

template <typename T>
std::optional<T> if_given(const CLI::Option* option, T value) {
  return option->count() > 0 ? std::optional<T>(value) : std::nullopt;
}

std::string read_prompt_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("--prompt-file {}: cannot open the file", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void check_prompt_source(const GenerateOptions& o) {
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
                                   const tokenizer::Tokenizer& tok) {
  if (!input.text) {
    std::vector<int32_t> ids = parse_token_ids(input.ids_json, "--prompt-ids", tok.vocab_size());
    if (ids.empty()) throw UsageError("--prompt-ids: the prompt is empty; the model needs a token to continue from");
    return ids;
  }
  std::string text = *input.text;
  const char* flag = o.prompt_option->count() > 0 ? "--prompt" : "--prompt-file";
  if (o.chat) text = render_chat_prompt(tok, if_given(o.system_option, o.system), text, !o.no_think);
  std::vector<int32_t> ids;
  try {
    // Special tokens written in the prompt count as such, as in transformers.
    ids = tok.encode(text, /*parse_special=*/true);
  } catch (const Error& e) {
    throw UsageError(fmt::format("{}: {}", flag, e.what()));  // the text itself is bad (invalid UTF-8)
  }
  if (ids.empty())
    throw UsageError(fmt::format("{}: the prompt is empty; the model needs text to continue from", flag));
  return ids;
}

std::string summary_line(const engine::GenerationResult& r, const engine::SamplingParams& params,
                         const engine::StopStringMatcher& matcher) {
  std::string stop(engine::stop_reason_name(r.stop_reason));
  if (r.stop_reason == engine::StopReason::kStopString) stop += fmt::format(" {:?}", matcher.matched());
  std::string seed = params.temperature > 0 ? fmt::format(", seed {}", *params.seed) : "";
  return fmt::format(
      "flashdraft: {} prompt tokens (prefill {:.1f} tok/s), {} generated tokens (decode {:.1f} tok/s), "
      "stop: {}{}",
      r.prompt_tokens, r.prefill_tokens_per_second(), r.tokens.size(), r.decode_tokens_per_second(), stop, seed);
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
  cmd->add_option("--model", o.model_dir, "Model directory (config.json, safetensors, tokenizer.json)")
      ->required()
      ->type_name("DIR");
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
  return cmd;
}

void run_generate(const GenerateOptions& o) {
  // Usage mistakes first, then the model directory, then the (slow) weights.
  check_prompt_source(o);
  SamplingFlags flags;
  flags.temperature = if_given(o.temperature_option, o.temperature);
  flags.top_p = if_given(o.top_p_option, o.top_p);
  flags.top_k = if_given(o.top_k_option, o.top_k);
  flags.min_p = if_given(o.min_p_option, o.min_p);
  flags.max_tokens = if_given(o.max_tokens_option, o.max_tokens);
  flags.seed = if_given(o.seed_option, static_cast<uint64_t>(o.seed));
  flags.stop = o.stop;
  flags.ignore_eos = o.ignore_eos;
  check_sampling_flags(flags);
  PromptInput input = read_prompt(o);
  std::filesystem::path dir = require_model_dir(o.model_dir, {"config.json", "tokenizer.json"});

  io::GenerationConfig generation = io::load_generation_config(dir);
  engine::SamplingParams params = resolve_sampling(generation, flags);
  if (!params.seed) params.seed = std::random_device{}();

  io::ModelConfig config = io::load_model_config(dir);
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(dir);
  std::vector<int32_t> prompt = prompt_tokens(o, input, tok);
  std::vector<int32_t> eos = collect_eos_ids(config, generation, tok);

  io::Checkpoint checkpoint = io::Checkpoint::open(dir);
  LoadProgress progress(stderr, stderr_is_terminal());
  std::unique_ptr<model::Qwen3Model> model =
      model::Qwen3Model::load(checkpoint, config, [&](size_t done, size_t total) { progress.update(done, total); });
  progress.finish(checkpoint.total_bytes());

  ModelLogits logits(*model);
  TextStream stream(tok, params.stop, write_text);
  engine::GenerationResult result =
      engine::generate(logits, prompt, params, eos, [&](int32_t token) { return stream.push(token); });
  stream.finish();
  end_line_on_terminal(stream.text());
  fmt::print(stderr, "{}\n", summary_line(result, params, stream.matcher()));
}

}  // namespace flashdraft::cli
