// hub_download.h in a build without libcurl: hub ids resolve from the local
// cache only, and a download says how to get one.
#include <fmt/format.h>

#include "core/error.h"
#include "serving/hub_download.h"

namespace flashdraft::serving {

std::filesystem::path download_snapshot(const HubRequest& request, std::FILE*) {
  throw Error(fmt::format(
      "it is not in the Hugging Face cache ({}), and this flashdraft was built without libcurl (apt-get install "
      "libcurl4-openssl-dev, then rebuild); fetch it with `huggingface-cli download {}` instead",
      request.cache.string(), request.id));
}

bool hub_download_available() { return false; }

}  // namespace flashdraft::serving
