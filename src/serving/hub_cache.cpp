#include "serving/hub_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

namespace flashdraft::serving {
namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// huggingface_hub's _is_true.
bool env_true(const char* name) {
  std::string v = env(name);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

// "~" and "~/..." as os.path.expanduser reads them.
fs::path expand_user(const std::string& p) {
  if (p == "~" || p.rfind("~/", 0) == 0) return fs::path(env("HOME")) / p.substr(p.size() > 1 ? 2 : 1);
  return p;
}

fs::path hf_home() {
  if (std::string h = env("HF_HOME"); !h.empty()) return expand_user(h);
  const std::string xdg = env("XDG_CACHE_HOME");
  return expand_user(xdg.empty() ? "~/.cache" : xdg) / "huggingface";
}

bool valid_part(std::string_view part) {
  if (part.empty()) return false;
  for (char c : part)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  // The regex's \b: a part starts and ends with a word character.
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return word(part.front()) && word(part.back());
}

bool exists_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // follows the snapshot's symlinks: a dangling one is missing
}

}  // namespace

bool is_hub_id(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos || s.find('/', slash + 1) != std::string_view::npos) return false;
  if (s.size() > 96 || s.find("--") != std::string_view::npos || s.find("..") != std::string_view::npos) return false;
  if (s.size() >= 4 && s.substr(s.size() - 4) == ".git") return false;
  return valid_part(s.substr(0, slash)) && valid_part(s.substr(slash + 1));
}

fs::path hub_cache_dir() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (std::string v = env(name); !v.empty()) return expand_user(v);
  return hf_home() / "hub";
}

bool hub_offline() { return env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE"); }

std::string hub_endpoint() {
  std::string e = env("HF_ENDPOINT");
  if (e.empty()) e = "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string hub_token() {
  std::string token;
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
    if (token = env(name); !token.empty()) break;
  if (token.empty()) {
    const std::string path = env("HF_TOKEN_PATH");
    std::ifstream in(path.empty() ? hf_home() / "token" : expand_user(path));
    std::stringstream ss;
    ss << in.rdbuf();
    token = ss.str();
  }
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  token.erase(token.begin(), std::find_if_not(token.begin(), token.end(), space));
  token.erase(std::find_if_not(token.rbegin(), token.rend(), space).base(), token.end());
  return token;
}

fs::path hub_repo_dir(const fs::path& cache, std::string_view id) {
  std::string folder = "models--" + std::string(id);
  folder.replace(folder.find('/'), 1, "--");
  return cache / folder;
}

std::vector<std::string> missing_model_files(const fs::path& snapshot, const ModelNeeds& needs) {
  std::vector<std::string> missing;
  if (!exists_file(snapshot / "config.json")) missing.push_back("config.json");
  if (needs.tokenizer && !exists_file(snapshot / "tokenizer.json")) missing.push_back("tokenizer.json");
  if (!needs.weights) return missing;
  const fs::path index = snapshot / "model.safetensors.index.json";
  if (!exists_file(index)) {
    if (!exists_file(snapshot / "model.safetensors")) missing.push_back("model.safetensors");
    return missing;
  }
  // A malformed index is the checkpoint reader's to report, with its details.
  std::ifstream in(index);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) return missing;
  std::set<std::string> shards;
  for (const auto& [name, shard] : j["weight_map"].items())
    if (shard.is_string()) shards.insert(shard.get<std::string>());
  for (const std::string& s : shards)
    if (!exists_file(snapshot / s)) missing.push_back(s);
  return missing;
}

std::optional<fs::path> cached_snapshot(const fs::path& cache, std::string_view id, std::string_view revision) {
  const fs::path repo = hub_repo_dir(cache, id);
  std::string commit(revision);
  std::ifstream ref(repo / "refs" / std::string(revision));
  if (ref) std::getline(ref, commit);
  std::error_code ec;
  const fs::path snapshot = repo / "snapshots" / commit;
  if (commit.empty() || !fs::is_directory(snapshot, ec)) return std::nullopt;
  return snapshot;
}

}  // namespace flashdraft::serving
