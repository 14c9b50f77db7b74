#include "serving/engine_flags.h"

#include <fmt/format.h>

#include <exception>
#include <optional>

#include "serving/model_dir.h"
#include "serving/speculative_config.h"

namespace flashdraft::serving {
namespace {

template <typename T>
std::optional<T> if_given(const CLI::Option* option, const T& value) {
  return option && option->count() > 0 ? std::optional<T>(value) : std::nullopt;
}

// A count >= 1, with a message that says so (CLI11's PositiveNumber prints its double range).
const CLI::Validator kAtLeastOne(
    [](std::string& text) -> std::string {
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size()) return "expected a whole number, got " + text;
      return v >= 1 ? std::string() : "must be >= 1, got " + text;
    },
    "POSITIVE");

}  // namespace

void add_engine_flags(CLI::App& cmd, EngineFlags& f, const std::string& max_num_seqs_names) {
  EngineOptions& e = f.engine;
  cmd.add_option("--model", f.model,
                 "Model directory (config.json, safetensors, tokenizer.json), or a Hugging Face hub id ORG/NAME "
                 "(from the local cache, downloaded into it when absent)")
      ->required()
      ->type_name("DIR|ID");
  cmd.add_option("--revision", f.revision, "With a hub id: the branch, tag or commit (default: main)")->type_name("REV");
  f.speculative_config_option =
      cmd.add_option("--speculative-config", f.speculative_config,
                     "DFlash speculative decoding, vLLM's spelling: "
                     "'{\"method\":\"dflash\",\"model\":\"DIR\",\"num_speculative_tokens\":15}'; greedy output is "
                     "token-identical to plain decoding, sampled output has the same distribution (default: none)")
          ->type_name("JSON");
  f.draft_model_option =
      cmd.add_option("--draft-model", f.draft_model, "The DFlash drafter directory or hub id, instead of --speculative-config")
          ->type_name("DIR");
  f.num_speculative_tokens_option =
      cmd.add_option("--num-speculative-tokens", f.num_speculative_tokens,
                     "With --draft-model: draft tokens per step, 1 .. the drafter's block_size - 1 (default: "
                     "block_size - 1)")
          ->type_name("N");
  cmd.add_flag("--no-adaptive-speculation", f.no_adaptive_speculation,
               "Draft num_speculative_tokens every step; by default each request's draft length is chosen every step "
               "(0 .. that many) from measured step costs and its acceptance so far (also \"adaptive\":false in "
               "--speculative-config)");
  f.draft_quantization_option =
      cmd.add_option("--speculative-draft-model-quantization", f.draft_quantization,
                     "With --draft-model: fp8 rounds the drafter's weights (and its copy of the lm head) to fp8 at "
                     "load; drafts cost less and may differ, output does not (also \"quantization\":\"fp8\" in "
                     "--speculative-config; default: none)")
          ->type_name("fp8");
  cmd.add_option("--device", e.device,
                 "Where the model runs: cuda, cpu, or auto = cuda when a GPU is visible, else cpu (default: auto)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->type_name("DEVICE");
  cmd.add_option("--tensor-parallel-size", e.tensor_parallel_size,
                 "Split the target and drafter over N ranks: N GPUs over NCCL on cuda, N threads on cpu (default: 1)")
      ->check(kAtLeastOne)
      ->type_name("N");
  cmd.add_option("--load-format", e.load_format,
                 "auto: the directory's safetensors; dummy: random weights of the config's exact shapes, for timing "
                 "real-size models without their checkpoint (default: auto)")
      ->check(CLI::IsMember({"auto", "dummy"}))
      ->type_name("FORMAT");
  cmd.add_option("--gpu-memory-utilization", e.gpu_memory_utilization,
                 fmt::format("Fraction of the GPU memory left free after loading the weights that the KV cache may "
                             "take (default: {})",
                             e.gpu_memory_utilization))
      ->check(CLI::Range(0.01, 1.0))
      ->type_name("FRACTION");
  cmd.add_flag("--enforce-eager", e.enforce_eager,
               "CUDA: launch every kernel of every step instead of replaying recorded graphs (slower; for debugging)");
  cmd.add_flag("--disable-overlap-schedule", e.disable_overlap_schedule,
               "CUDA: plan each step after reading the last one's results instead of launching it while that one "
               "runs (slower; the same tokens)");
  cmd.add_option("--max-model-len", e.max_model_len,
                 "Longest prompt + output a request may have (default: the model's max_position_embeddings)")
      ->check(kAtLeastOne)
      ->type_name("N");
  f.max_num_seqs_option =
      cmd.add_option(max_num_seqs_names, e.max_num_seqs,
                     fmt::format("Requests running at once; more wait (default: {})", e.max_num_seqs))
          ->check(kAtLeastOne)
          ->type_name("N");
  cmd.add_option("--max-num-batched-tokens", e.max_num_batched_tokens,
                 fmt::format("Most tokens (prefill chunks and verify rows) one forward pass runs (default: {})",
                             e.max_num_batched_tokens))
      ->check(kAtLeastOne)
      ->type_name("N");
}

EngineOptions engine_options(const EngineFlags& f) {
  EngineOptions e = f.engine;
  const bool weights = e.load_format != "dummy";
  e.speculative = speculative_setup(if_given(f.draft_model_option, f.draft_model),
                                    if_given(f.num_speculative_tokens_option, f.num_speculative_tokens),
                                    if_given(f.speculative_config_option, f.speculative_config), weights,
                                    if_given(f.draft_quantization_option, f.draft_quantization));
  if (f.no_adaptive_speculation) e.speculative.adaptive = false;
  e.model = resolve_model("--model", f.model, {.tokenizer = true, .weights = weights}, f.revision).string();
  return e;
}

}  // namespace flashdraft::serving
