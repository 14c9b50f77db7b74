#pragma once
// Everything between a model directory and a running engine, shared by
// `generate` (one prompt or a prompts file), `serve` and bench_dflash.
//
// Two stages, so that bad input (flags, prompts) is rejected before the slow
// weight load:
//   ModelFiles files = read_model_files(dir);                  // small files, fast
//   LoadedEngine loaded = build_engine(std::move(files), opts);  // weights, engine
// or build_engine(opts) for both at once. The pieces build_engine is made of
// (load_target, load_drafter, make_engine) are here too, for a caller that
// runs one target with several drafters (bench_dflash).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "engine/llm_engine.h"
#include "engine/sampling_params.h"
#include "io/generation_config.h"
#include "io/model_config.h"
#include "model/dflash_drafter.h"
#include "model/qwen3_model.h"
#include "serving/speculative_config.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::serving {

// How to build the engine, named after vLLM's flags.
struct EngineOptions {
  std::string model;             // the target's directory (--model)
  SpeculativeSetup speculative;  // the drafter (none: plain decoding); see speculative_setup()
  std::string device = "auto";   // cpu | cuda | auto (cuda when a GPU is visible)
  std::string load_format = "auto";  // auto: the safetensors; dummy: random weights of the configs' shapes
  double gpu_memory_utilization = 0.9;  // share of the GPU's free memory (after the weights) the KV cache may take
  int64_t max_model_len = 0;  // longest prompt + output; 0: config.json's max_position_embeddings
  int64_t max_num_seqs = engine::EngineConfig{}.max_running;                      // sequences running at once
  int64_t max_num_batched_tokens = engine::EngineConfig{}.max_tokens_per_step;  // rows of one forward
  bool enforce_eager = false;  // no recorded graphs (CUDA): every step launches its kernels
  bool disable_overlap_schedule = false;  // plan each step after reading the last (EngineConfig::overlap_scheduling)
  // Ranks the target and drafter are split over (--tensor-parallel-size;
  // model/tensor_parallel.h): threads with CPU backends on cpu, one GPU each
  // over NCCL on cuda. 1: no splitting, today's single-backend path.
  int tensor_parallel_size = 1;
  // Longest prompt + output any request will have, for sizing the KV pool;
  // 0: max_model_len (a server). The CLI knows its prompts and asks for less.
  int64_t positions_per_seq = 0;
};

// A model directory's small files and what follows from them.
struct ModelFiles {
  std::filesystem::path dir;  // absolute
  io::ModelConfig config;
  io::GenerationConfig generation;
  tokenizer::Tokenizer tokenizer;
  engine::SamplingParams defaults;  // sampling_defaults(generation), not validated
  std::vector<int32_t> eos;         // eos_token_ids(config, generation, tokenizer)
  // The tokenizer's chat template, parsed; none when the directory has none
  // or it did not parse (chat_template_error then says why).
  std::optional<chat::ChatTemplate> chat_template;
  std::string chat_template_error;
};

// Throws UsageError "--model DIR: ..." when dir is missing or lacks
// config.json / tokenizer.json, flashdraft::Error when a file is malformed.
ModelFiles read_model_files(const std::filesystem::path& dir);

struct LoadedEngine {
  ModelFiles files;
  std::unique_ptr<model::Qwen3Model> target;
  std::unique_ptr<model::DFlashDrafter> drafter;  // null: plain decoding
  // Refers to the models above: whoever takes it (an AsyncEngine) must be
  // gone before they are.
  std::unique_ptr<engine::Engine> engine;
  int64_t max_model_len = 0;  // the engine's context limit
};

// Progress and "loaded ..." lines go to `log` (nullptr: quiet); a progress
// bar is drawn only when log is a terminal.
LoadedEngine build_engine(ModelFiles files, const EngineOptions& options, std::FILE* log = stderr);
LoadedEngine build_engine(const EngineOptions& options, std::FILE* log = stderr);  // reads options.model first

// The target's weights on the backend options.device names (split over
// options.tensor_parallel_size ranks when > 1: rank 0's shard, owning the rest).
std::unique_ptr<model::Qwen3Model> load_target(const ModelFiles& files, const EngineOptions& options, std::FILE* log);
// options.speculative's drafter for `target`; null when it names none.
std::unique_ptr<model::DFlashDrafter> load_drafter(const EngineOptions& options, const model::Qwen3Model& target,
                                                   std::FILE* log);
// An engine over the models with options' limits and a KV pool sized by
// size_kv_pool. Throws UsageError naming the flag for a limit out of range
// (--max-model-len above the model's context, num_speculative_tokens above
// the drafter's block_size - 1, --max-num-batched-tokens below one verify
// step) or a KV pool that does not fit. On a GPU, a pool capped by
// --gpu-memory-utilization is reported on `log`.
std::unique_ptr<engine::Engine> make_engine(model::Qwen3Model& target, model::DFlashDrafter* drafter,
                                            const EngineOptions& options, std::vector<int32_t> eos,
                                            std::FILE* log);

}  // namespace flashdraft::serving
