#pragma once
// `flashdraft generate`: load a model directory (and optionally a DFlash
// drafter), run one prompt, stream the continuation to stdout and a one-line
// summary to stderr; or, with --prompts-file, run many prompts concurrently
// and print per-request and total statistics.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "serving/engine_builder.h"

namespace flashdraft::cli {

struct GenerateOptions {
  std::string model_dir;           // a directory, or a hub id (ORG/NAME) resolved through the HF cache
  std::string revision = "main";   // --revision: of a hub id
  std::string prompt, prompt_file, prompt_ids;
  bool chat = false;
  std::string system;
  bool no_think = false;
  int max_tokens = 0;
  double temperature = 0, top_p = 0, min_p = 0;
  int top_k = 0;
  int64_t seed = 0;
  double presence_penalty = 0, frequency_penalty = 0, repetition_penalty = 1;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  // DFlash: --draft-model [--num-speculative-tokens], or --speculative-config JSON.
  std::string draft_model, speculative_config;
  int num_speculative_tokens = 0;
  bool no_adaptive_speculation = false;  // draft num_speculative_tokens every step
  // Where and how the weights load: --device cpu|cuda|auto, --load-format auto|dummy.
  std::string device = "auto", load_format = "auto";
  bool special = true;  // special tokens written in the prompt become their ids
  double gpu_memory_utilization = 0.9;
  bool enforce_eager = false;
  int64_t max_model_len = 0;  // 0: the model's max_position_embeddings
  int64_t max_num_batched_tokens = 0;  // 0: the engine's default
  // Batch mode: prompts from a jsonl file, run concurrently.
  std::string prompts_file, output;
  int concurrency = 8;  // --concurrency, or vLLM's --max-num-seqs
  // Set by add_generate_command: which flags were given (a given flag
  // overrides generation_config.json; an absent one does not).
  const CLI::Option *prompt_option = nullptr, *prompt_file_option = nullptr, *prompt_ids_option = nullptr,
                    *system_option = nullptr, *max_tokens_option = nullptr, *temperature_option = nullptr,
                    *top_p_option = nullptr, *top_k_option = nullptr, *min_p_option = nullptr, *seed_option = nullptr,
                    *draft_model_option = nullptr, *num_speculative_tokens_option = nullptr,
                    *speculative_config_option = nullptr, *prompts_file_option = nullptr, *concurrency_option = nullptr,
                    *output_option = nullptr, *presence_penalty_option = nullptr, *frequency_penalty_option = nullptr,
                    *repetition_penalty_option = nullptr;
};

CLI::App* add_generate_command(CLI::App& app, GenerateOptions& options);
void run_generate(const GenerateOptions& options);

// The engine flags as the builder takes them; positions_per_seq and
// max_num_seqs are left to the mode, which knows its prompts.
serving::EngineOptions engine_options(const GenerateOptions& options, const serving::SpeculativeSetup& spec);

}  // namespace flashdraft::cli
