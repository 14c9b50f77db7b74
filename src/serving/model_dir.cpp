#include "serving/model_dir.h"

#include <fmt/format.h>

#include <system_error>

#include "core/error.h"

namespace flashdraft::serving {

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
