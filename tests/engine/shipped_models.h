#pragma once
// The shipped model pair (models/target, models/drafter-full,
// models/drafter-swa), loaded once per test binary, and the HumanEval prompts
// (tests/fixtures/engine/humaneval.jsonl) tokenised with the target's tokenizer.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/llm_engine.h"
#include "model/dflash_drafter.h"
#include "model/qwen3_model.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::engine::testing {

std::filesystem::path models_dir();

struct ShippedModels {
  std::unique_ptr<model::Qwen3Model> target;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::vector<int32_t> eos;  // generation_config.json's eos_token_id
  std::unique_ptr<model::DFlashDrafter> full, swa;
  std::unique_ptr<model::DFlashDrafter> full_fp8;  // drafter-full rounded to fp8 ("quantization": "fp8")
  model::DFlashDrafter& drafter(const std::string& name) {
    return name == "drafter-full" ? *full : name == "drafter-full-fp8" ? *full_fp8 : *swa;
  }
};
// Loaded on first use, once per device ("cpu", "cuda": ops::make_backend's names).
ShippedModels& shipped(const std::string& device = "cpu");

// task_id and token ids of every HumanEval prompt, in file order.
struct Prompt {
  std::string task_id;
  std::vector<int32_t> ids;
};
const std::vector<Prompt>& humaneval_prompts();
// KV blocks (of 16) for `running` requests of the longest HumanEval prompt,
// `new_tokens` new tokens and a full draft block.
int64_t humaneval_pool(int64_t running, int new_tokens);

// Runs every prompt through one engine (all queued at once; the engine's
// max_running decides the concurrency) and returns each output.
struct RunResult {
  std::vector<std::vector<int32_t>> tokens;
  SpecStats stats;
  int64_t preemptions = 0;
  std::vector<int64_t> request_preemptions;
  int64_t recording_steps = 0;  // Engine::recording_steps
  int64_t steps = 0, followed_steps = 0;  // Engine::steps, Engine::followed_steps
};
// `models` (default: shipped()) holds the target; drafter, if any, must be one of its drafters.
// With params.seed set, prompt i is seeded with *params.seed + i.
RunResult run_all(model::DFlashDrafter* drafter, const EngineConfig& config, const std::vector<Prompt>& prompts,
                  const SamplingParams& params, ShippedModels* models = nullptr);

SamplingParams greedy(int max_tokens);

}  // namespace flashdraft::engine::testing
