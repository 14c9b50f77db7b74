#pragma once
// The command-line flags that choose and shape the engine, registered once
// for every command that builds one (`generate`, `serve`), so they are
// spelled and explained alike, in vLLM's spelling: --model, --revision,
// --draft-model, --num-speculative-tokens, --speculative-config,
// --no-adaptive-speculation, --device, --tensor-parallel-size,
// --load-format, --gpu-memory-utilization, --enforce-eager,
// --max-model-len, --max-num-seqs, --max-num-batched-tokens; and SGLang's
// --speculative-draft-model-quantization, which vLLM spells only inside
// --speculative-config.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "serving/engine_builder.h"

namespace flashdraft::serving {

struct EngineFlags {
  std::string model;              // a directory, or a hub id (ORG/NAME) resolved through the HF cache
  std::string revision = "main";  // of hub ids
  // DFlash: --draft-model [--num-speculative-tokens], or --speculative-config JSON.
  std::string draft_model, speculative_config;
  int num_speculative_tokens = 0;
  bool no_adaptive_speculation = false;  // draft num_speculative_tokens every step
  std::string draft_quantization;        // --speculative-draft-model-quantization
  // device, load_format, gpu_memory_utilization, enforce_eager, disable_overlap_schedule,
  // tensor_parallel_size, max_model_len, max_num_seqs, max_num_batched_tokens
  // as given (or the defaults); model and speculative come from engine_options().
  EngineOptions engine;
  // Set by add_engine_flags: which flags were given.
  const CLI::Option *draft_model_option = nullptr, *num_speculative_tokens_option = nullptr,
                    *speculative_config_option = nullptr, *max_num_seqs_option = nullptr,
                    *draft_quantization_option = nullptr;
};

// Registers the flags on `cmd`, bound to `flags` (whose values are the
// defaults shown). `max_num_seqs_names`: CLI11 names of --max-num-seqs (a
// command may add an alias of its own).
void add_engine_flags(CLI::App& cmd, EngineFlags& flags, const std::string& max_num_seqs_names = "--max-num-seqs");

// The builder's options: the drafter set up from the speculative flags and
// hub ids resolved to directories (downloaded when absent). Throws
// UsageError naming the flag for a bad combination or model.
EngineOptions engine_options(const EngineFlags& flags);

}  // namespace flashdraft::serving
