#pragma once
// Hugging Face hub ids (ORG/NAME) and the local cache exactly as
// huggingface_hub lays it out, so a model fetched by either tool is found by
// the other:
//   <cache>/models--ORG--NAME/blobs/<etag>             file contents
//   <cache>/models--ORG--NAME/refs/<revision>          the commit a branch/tag names
//   <cache>/models--ORG--NAME/snapshots/<commit>/FILE  -> ../../blobs/<etag>
//   <cache>/models--ORG--NAME/.no_exist/<commit>/FILE  FILE is not in that commit
// <cache> is HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub
// (XDG_CACHE_HOME replaces ~/.cache), as huggingface_hub resolves it.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::serving {

// What a model directory must hold for its role.
struct ModelNeeds {
  bool tokenizer = true;  // a target: tokenizer.json
  bool weights = true;    // false with --load-format dummy
};

// ORG/NAME with huggingface_hub's allowed characters (letters, digits, - _ .),
// no "--" or "..", not ending in ".git", at most 96 characters. A bare NAME
// is not taken as an id here: it is far more likely a mistyped directory.
bool is_hub_id(std::string_view s);

// Environment settings of huggingface_hub.
std::filesystem::path hub_cache_dir();
bool hub_offline();           // HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is 1/ON/YES/TRUE
std::string hub_endpoint();   // HF_ENDPOINT without a trailing '/', else https://huggingface.co
std::string hub_token();      // HF_TOKEN, else the token file (HF_TOKEN_PATH, else HF_HOME/token); "" if none

// <cache>/models--ORG--NAME.
std::filesystem::path hub_repo_dir(const std::filesystem::path& cache, std::string_view id);

// The files of `needs` that snapshot lacks: config.json, tokenizer.json, and
// the weights (every shard model.safetensors.index.json names, else
// model.safetensors). Empty: the directory is complete for that role.
std::vector<std::string> missing_model_files(const std::filesystem::path& snapshot, const ModelNeeds& needs);

// The snapshot `revision` (a branch, tag or commit) names in the cache, if
// its directory exists; nullopt otherwise. It may still lack files.
std::optional<std::filesystem::path> cached_snapshot(const std::filesystem::path& cache, std::string_view id,
                                                     std::string_view revision);

}  // namespace flashdraft::serving
