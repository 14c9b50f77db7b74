#include "cli/token_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "cli/terminal.h"
#include "cli/token_ids_json.h"
#include "core/error.h"
#include "serving/model_dir.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::cli {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("--file {}: cannot open the file", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

tokenizer::Tokenizer load_tokenizer(const std::string& model_dir) {
  const auto dir = serving::resolve_model("--model", model_dir, {.tokenizer = true, .weights = false});
  return tokenizer::Tokenizer::load(serving::require_model_dir(dir, {"tokenizer.json"}));
}

}  // namespace

CLI::App* add_tokenize_command(CLI::App& app, TokenizeOptions& options) {
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  cmd->add_option("--model", options.model_dir,
                  "Model directory or hub id ORG/NAME (only tokenizer.json and tokenizer_config.json are read)")
      ->required()
      ->type_name("DIR");
  auto* text = cmd->add_option("--text", options.text, "Text to tokenize")->type_name("TEXT");
  auto* file = cmd->add_option("--file", options.file, "Read the text to tokenize from this file")->type_name("FILE");
  text->excludes(file);
  options.text_option = text;
  options.file_option = file;
  auto* special = cmd->add_flag("--special", options.special,
                                "Special tokens written in the text (e.g. <|im_start|>) become their ids, as "
                                "Hugging Face tokenizers and vLLM do (the default)");
  cmd->add_flag("--no-special", [&options](int64_t) { options.special = false; },
                "Tokenize special tokens written in the text as plain text")
      ->excludes(special);
  return cmd;
}

CLI::App* add_detokenize_command(CLI::App& app, DetokenizeOptions& options) {
  CLI::App* cmd = app.add_subcommand("detokenize", "Print the text of a JSON array of token ids");
  cmd->add_option("--model", options.model_dir,
                  "Model directory or hub id ORG/NAME (only tokenizer.json and tokenizer_config.json are read)")
      ->required()
      ->type_name("DIR");
  cmd->add_option("--ids", options.ids, "Token ids as a JSON array, e.g. '[9707,11,1879]'")
      ->required()
      ->type_name("JSON");
  cmd->add_flag("--skip-special", options.skip_special, "Leave special tokens out of the text (default: keep them)");
  return cmd;
}

void run_tokenize(const TokenizeOptions& options) {
  if (options.text_option->count() == 0 && options.file_option->count() == 0) {
    throw UsageError("tokenize needs the text: give --text TEXT or --file FILE");
  }
  // Check the input before the (slower) tokenizer load.
  std::string text = options.file.empty() ? options.text : read_file(options.file);
  tokenizer::Tokenizer tok = load_tokenizer(options.model_dir);
  std::vector<int32_t> ids;
  try {
    ids = tok.encode(text, options.special);
  } catch (const Error& e) {
    throw UsageError(fmt::format("{}: {}", options.file.empty() ? "--text" : "--file", e.what()));
  }
  fmt::print("{}\n", format_token_ids(ids));
}

void run_detokenize(const DetokenizeOptions& options) {
  tokenizer::Tokenizer tok = load_tokenizer(options.model_dir);
  std::vector<int32_t> ids = parse_token_ids(options.ids, "--ids", tok.vocab_size());
  std::string text = tok.decode(ids, options.skip_special);
  write_text(text);
  end_line_on_terminal(text);
}

}  // namespace flashdraft::cli
