#include "serving/model_dir.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <system_error>
#include <vector>

#include "core/error.h"
#include "serving/hub_download.h"

namespace flashdraft::serving {

std::filesystem::path resolve_model(std::string_view flag, const std::string& model, const ModelNeeds& needs,
                                    const std::string& revision, std::FILE* log) {
  std::error_code ec;
  if (std::filesystem::exists(model, ec) || !is_hub_id(model)) {
    std::filesystem::path abs = std::filesystem::absolute(model, ec);
    return ec ? std::filesystem::path(model) : abs;
  }
  if (revision.empty() || revision.front() == '/' || revision.find("..") != std::string::npos) {
    throw UsageError(fmt::format("--revision {:?}: not a branch, tag or commit name", revision));
  }
  const std::filesystem::path cache = hub_cache_dir();
  const auto snapshot = cached_snapshot(cache, model, revision);
  std::vector<std::string> missing = snapshot ? missing_model_files(*snapshot, needs) : std::vector<std::string>{};
  if (snapshot && missing.empty()) return *snapshot;
  if (hub_offline()) {
    throw UsageError(fmt::format(
        "{} {}: not a local directory, and {} in the Hugging Face cache {} (revision {}); HF_HUB_OFFLINE is set, "
        "so nothing is downloaded",
        flag, model, snapshot ? "incomplete (no " + fmt::format("{}", fmt::join(missing, ", ")) + ")" : "not",
        cache.string(), revision));
  }
  HubRequest request{model, revision, needs, cache, hub_endpoint(), hub_token()};
  std::filesystem::path fetched;
  try {
    fetched = download_snapshot(request, log);
  } catch (const Error& e) {
    // The id may as well be a mistyped local path: say both.
    throw Error(fmt::format("{} {}: not a local directory, and downloading it failed: {}", flag, model, e.what()));
  }
  missing = missing_model_files(fetched, needs);
  if (!missing.empty()) {
    throw Error(fmt::format("{} {}: the hub's revision {} has no {}", flag, model, revision,
                            fmt::join(missing, ", ")));
  }
  return fetched;
}

std::filesystem::path require_model_dir(const std::filesystem::path& dir,
                                        std::initializer_list<std::string_view> required_files) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(dir, ec);
  if (ec) abs = dir;
  if (!std::filesystem::exists(abs, ec)) {
    throw UsageError(fmt::format("--model DIR: no such directory: {}", abs.string()));
  }
  if (!std::filesystem::is_directory(abs, ec)) {
    throw UsageError(fmt::format("--model DIR: {} is a file; expected the model's directory", abs.string()));
  }
  for (std::string_view name : required_files) {
    if (!std::filesystem::is_regular_file(abs / name, ec)) {
      throw UsageError(fmt::format("--model DIR: no {} in {}", name, abs.string()));
    }
  }
  return abs;
}

}  // namespace flashdraft::serving
