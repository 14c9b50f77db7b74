#pragma once
// `flashdraft generate`: load a model directory, run one prompt, stream the
// continuation to stdout and a one-line summary to stderr.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace flashdraft::cli {

struct GenerateOptions {
  std::string model_dir;
  std::string prompt, prompt_file, prompt_ids;
  bool chat = false;
  std::string system;
  bool no_think = false;
  int max_tokens = 0;
  double temperature = 0, top_p = 0, min_p = 0;
  int top_k = 0;
  int64_t seed = 0;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  // Set by add_generate_command: which flags were given (a given flag
  // overrides generation_config.json; an absent one does not).
  const CLI::Option *prompt_option = nullptr, *prompt_file_option = nullptr, *prompt_ids_option = nullptr,
                    *system_option = nullptr, *max_tokens_option = nullptr, *temperature_option = nullptr,
                    *top_p_option = nullptr, *top_k_option = nullptr, *min_p_option = nullptr, *seed_option = nullptr;
};

CLI::App* add_generate_command(CLI::App& app, GenerateOptions& options);
void run_generate(const GenerateOptions& options);

}  // namespace flashdraft::cli
