#pragma once
// A complete model directory for end-to-end `generate` tests, assembled in
// the build tree: the random tiny-qwen3 weights (tests/fixtures/tiny-qwen3)
// plus the tiny byte-level tokenizer made for its 512-id vocabulary
// (tests/fixtures/cli/tiny-tokenizer, tools/make_cli_tiny_tokenizer.py).
// config.json and generation_config.json are tiny-qwen3's with bos/eos ids
// pointed at the tokenizer's <|endoftext|> / <|im_end|>.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace flashdraft::cli::test {

struct ModelFiles {
  nlohmann::json config, generation_config, tokenizer_config;
};

// Builds a fresh directory for `name` under FD_CLI_WORK_DIR and returns its
// path; ctest runs test cases in parallel processes, so each process gets its
// own. `patch` may edit the JSON files before they are written.
std::string assemble_tiny_model(const std::string& name, const std::function<void(ModelFiles&)>& patch = {});
// This process's scratch directory (for prompt files and the like).
std::string scratch_dir();
// Deletes this process's directories.
void remove_scratch_dir();

}  // namespace flashdraft::cli::test
