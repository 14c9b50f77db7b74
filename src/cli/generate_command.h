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
#include "serving/engine_flags.h"

namespace flashdraft::cli {

struct GenerateOptions {
  GenerateOptions() { engine.engine.max_num_seqs = 8; }  // batch mode's --concurrency

  serving::EngineFlags engine;  // the engine flags `serve` shares
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
  bool special = true;  // special tokens written in the prompt become their ids
  // Batch mode: prompts from a jsonl file, run concurrently (up to
  // --concurrency, alias --max-num-seqs: engine.engine.max_num_seqs).
  std::string prompts_file, output;
  // Set by add_generate_command: which flags were given (a given flag
  // overrides generation_config.json; an absent one does not).
  const CLI::Option *prompt_option = nullptr, *prompt_file_option = nullptr, *prompt_ids_option = nullptr,
                    *system_option = nullptr, *max_tokens_option = nullptr, *temperature_option = nullptr,
                    *top_p_option = nullptr, *top_k_option = nullptr, *min_p_option = nullptr, *seed_option = nullptr,
                    *prompts_file_option = nullptr, *output_option = nullptr, *presence_penalty_option = nullptr,
                    *frequency_penalty_option = nullptr, *repetition_penalty_option = nullptr;
};

CLI::App* add_generate_command(CLI::App& app, GenerateOptions& options);
void run_generate(const GenerateOptions& options);

}  // namespace flashdraft::cli
