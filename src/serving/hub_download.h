#pragma once
// Downloads a model from a Hugging Face hub into the local cache, in
// huggingface_hub's layout (serving/hub_cache.h), with libcurl:
//   GET/HEAD {HF_ENDPOINT}/ORG/NAME/resolve/REVISION/FILE
// with "Authorization: Bearer $HF_TOKEN" when a token is set. Each file goes
// to blobs/<etag>.incomplete first and becomes blobs/<etag> only once its
// full size is there; the snapshot's link and refs/REVISION come after, so
// nothing half-written ever looks complete. An .incomplete file is resumed
// with a Range request (interrupted transfers are retried a few times within
// one call, and on the next run). Failures are one line (flashdraft::Error):
// 401/403 (private, gated or no such model), 404, network, disk full.
#include <cstdio>
#include <filesystem>
#include <string>

#include "serving/hub_cache.h"

namespace flashdraft::serving {

struct HubRequest {
  std::string id;                 // ORG/NAME
  std::string revision = "main";  // branch, tag or commit
  ModelNeeds needs;
  std::filesystem::path cache;    // hub_cache_dir()
  std::string endpoint;           // hub_endpoint()
  std::string token;              // hub_token(); "" sends none
};

// Fetches what `needs` asks for that the snapshot lacks (config.json,
// generation_config.json, tokenizer files, the safetensors index and its
// shards, or model.safetensors) and returns snapshots/<commit>. Progress (a
// bar on a terminal) and a final line go to `log` (nullptr: quiet).
std::filesystem::path download_snapshot(const HubRequest& request, std::FILE* log);

// Whether this build can download (libcurl was found at build time).
bool hub_download_available();

}  // namespace flashdraft::serving
