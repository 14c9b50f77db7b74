#pragma once
// What `generate` needs before the first token: the drafter settings from
// the command line, the target and (optionally) the drafter loaded with
// progress lines, and an engine sized for the requests it will run.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "cli/generate_command.h"
#include "cli/speculative_config.h"
#include "engine/llm_engine.h"
#include "io/model_config.h"
#include "model/dflash_drafter.h"
#include "model/qwen3_model.h"

namespace flashdraft::cli {

// From --draft-model / --num-speculative-tokens / --speculative-config.
// Throws UsageError on a conflicting or incomplete combination, and when the
// drafter directory (which must hold config.json) is missing.
SpeculativeSetup speculative_setup(const GenerateOptions& options);

struct LoadedModels {
  std::unique_ptr<model::Qwen3Model> target;
  std::unique_ptr<model::DFlashDrafter> drafter;  // null: plain decoding
  double gpu_memory_utilization = 0.9;
};

// Loads the target from `dir` (config already read) and the drafter named by
// setup onto the backend --device names (--load-format dummy: random weights
// of the configs' shapes), each with its own "loaded ..." line on stderr.
LoadedModels load_models(const std::filesystem::path& dir, const io::ModelConfig& config,
                         const SpeculativeSetup& setup, const GenerateOptions& options);

// An engine for up to `running` requests at once whose prompts have at most
// `longest_prompt` tokens, with the KV pool sized for exactly that. On a GPU,
// a pool larger than --gpu-memory-utilization of the free memory is a
// UsageError that says what would fit.
std::unique_ptr<engine::Engine> make_engine(LoadedModels& models, const SpeculativeSetup& setup, int64_t running,
                                            int64_t longest_prompt, int64_t max_tokens, std::vector<int32_t> eos);

}  // namespace flashdraft::cli
