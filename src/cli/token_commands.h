#pragma once
// `flashdraft tokenize` and `flashdraft detokenize`: look at what the model
// sees. They read only the tokenizer files, never the weights.
#include <CLI/CLI.hpp>
#include <string>

namespace flashdraft::cli {

struct TokenizeOptions {
  std::string model_dir;
  std::string text;
  std::string file;
  bool special = true;  // special tokens written in the text become their ids, as in HF tokenizers
  // Set by add_tokenize_command; tell "--text ''" (valid, empty) from no --text.
  const CLI::Option* text_option = nullptr;
  const CLI::Option* file_option = nullptr;
};

struct DetokenizeOptions {
  std::string model_dir;
  std::string ids;
  bool skip_special = false;
};

CLI::App* add_tokenize_command(CLI::App& app, TokenizeOptions& options);
CLI::App* add_detokenize_command(CLI::App& app, DetokenizeOptions& options);
void run_tokenize(const TokenizeOptions& options);
void run_detokenize(const DetokenizeOptions& options);

}  // namespace flashdraft::cli
