#include "tiny_model_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace flashdraft::cli::test {
namespace fs = std::filesystem;
namespace {

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return nlohmann::json::parse(in);
}

void write_json(const fs::path& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(2) << "\n"; }

int added_token_id(const nlohmann::json& tokenizer, const std::string& content) {
  for (const auto& t : tokenizer.at("added_tokens")) {
    if (t.at("content") == content) return t.at("id").get<int>();
  }
  throw std::runtime_error("tiny tokenizer lacks " + content);
}

}  // namespace

std::string scratch_dir() {
  fs::path dir = fs::path(FD_CLI_WORK_DIR) / ("pid-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir.string();
}

void remove_scratch_dir() { fs::remove_all(scratch_dir()); }

std::string assemble_tiny_model(const std::string& name, const std::function<void(ModelFiles&)>& patch) {
  const fs::path weights = FD_FIXTURES_DIR "/tiny-qwen3";
  const fs::path tok = FD_FIXTURES_DIR "/cli/tiny-tokenizer";
  const fs::path dir = fs::path(scratch_dir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(weights)) {
    std::string file = entry.path().filename().string();
    if (file.ends_with(".safetensors") || file == "model.safetensors.index.json") {
      fs::copy_file(entry.path(), dir / file);
    }
  }
  fs::copy_file(tok / "tokenizer.json", dir / "tokenizer.json");

  nlohmann::json tokenizer = read_json(tok / "tokenizer.json");
  ModelFiles files{read_json(weights / "config.json"), read_json(weights / "generation_config.json"),
                   read_json(tok / "tokenizer_config.json")};
  size_t tokenizer_ids = tokenizer.at("model").at("vocab").size() + tokenizer.at("added_tokens").size();
  if (files.config.at("vocab_size").get<size_t>() != tokenizer_ids) {
    throw std::runtime_error("tiny-qwen3's vocab_size changed; rerun tools/make_cli_tiny_tokenizer.py");
  }
  const int endoftext = added_token_id(tokenizer, "<|endoftext|>");
  const int im_end = added_token_id(tokenizer, "<|im_end|>");
  files.config["bos_token_id"] = endoftext;
  files.config["eos_token_id"] = im_end;
  files.generation_config["bos_token_id"] = endoftext;
  files.generation_config["eos_token_id"] = {im_end, endoftext};
  if (patch) patch(files);
  write_json(dir / "config.json", files.config);
  write_json(dir / "generation_config.json", files.generation_config);
  write_json(dir / "tokenizer_config.json", files.tokenizer_config);
  return dir.string();
}

}  // namespace flashdraft::cli::test
