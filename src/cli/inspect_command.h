#pragma once
// `flashdraft inspect --model DIR [--draft-model DIR] [--config-only] [--json]`:
// what a model directory (or a target + DFlash drafter pair) is, checked
// without loading weights. Reads config.json and, unless --config-only, the
// safetensors headers (names, shapes, dtypes: the data is never read), then
// prints architecture, parameters, bytes by dtype, KV bytes per token,
// context length, the drafter's layer kinds, taps, mask token and block size,
// and whether the pair fits. --model may name a drafter alone.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace flashdraft::cli {

struct InspectOptions {
  std::string model_dir, draft_model_dir;  // directories or hub ids
  std::string revision = "main";
  bool config_only = false;
  bool json = false;
};

CLI::App* add_inspect_command(CLI::App& app, InspectOptions& options);

// Prints the report on stdout; returns one line per problem found (each
// naming its file and field or tensor), empty when everything checks out.
std::vector<std::string> run_inspect(const InspectOptions& options);

}  // namespace flashdraft::cli
