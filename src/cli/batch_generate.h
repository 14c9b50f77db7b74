#pragma once
// `flashdraft generate --prompts-file F`: every prompt of a jsonl file goes
// through the engine's scheduler at once (up to --concurrency running), so
// this is continuous batching seen from the command line. stdout gets one
// statistics line per request and a total; --output gets the completions.
#include "cli/generate_command.h"
#include "cli/sampling_setup.h"
#include "serving/engine_builder.h"

namespace flashdraft::cli {

// engine: the engine flags as the builder takes them (max_num_seqs is
// --concurrency); the KV pool's positions_per_seq comes from the prompts.
void run_batch(const GenerateOptions& options, const SamplingFlags& flags, serving::EngineOptions engine);

}  // namespace flashdraft::cli
