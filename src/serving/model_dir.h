#pragma once
// Where a --model (or --draft-model) value points: a local directory, or a
// Hugging Face hub id resolved through the local cache (downloaded into it
// when absent); and the up-front check of a directory's files, so a typo in a
// path is one clear usage line (exit code 2) instead of an error from deep
// inside a loader.
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include "serving/hub_cache.h"

namespace flashdraft::serving {

// `model` as given when it names an existing path or is not a hub id
// (ORG/NAME); otherwise the cache's snapshot of `revision` (branch, tag or
// commit) of that id, fetched first if the cache lacks a file `needs` asks
// for, unless HF_HUB_OFFLINE is set (serving/hub_cache.h, hub_download.h).
// Returns an absolute path. Throws UsageError "FLAG ID: ..." when the id is
// offline and not cached, flashdraft::Error when a download fails.
std::filesystem::path resolve_model(std::string_view flag, const std::string& model, const ModelNeeds& needs,
                                    const std::string& revision = "main", std::FILE* log = stderr);

// Throws UsageError "--model DIR: ..." when dir is not a directory or lacks
// one of the named files. Returns the directory made absolute.
std::filesystem::path require_model_dir(const std::filesystem::path& dir,
                                        std::initializer_list<std::string_view> required_files);

}  // namespace flashdraft::serving
