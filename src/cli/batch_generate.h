#pragma once
// `flashdraft generate --prompts-file F`: every prompt of a jsonl file goes
// through the engine's scheduler at once (up to --concurrency running), so
// this is continuous batching seen from the command line. stdout gets one
// statistics line per request and a total; --output gets the completions.
#include "cli/generate_command.h"
#include "cli/sampling_setup.h"
#include "cli/speculative_config.h"

namespace flashdraft::cli {

void run_batch(const GenerateOptions& options, const SamplingFlags& flags, const SpeculativeSetup& spec);

}  // namespace flashdraft::cli
