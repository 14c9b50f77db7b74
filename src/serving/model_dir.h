#pragma once
// Checks a --model directory up front, so a typo in a path is one clear usage
// line (exit code 2) instead of an error from deep inside a loader.
#include <filesystem>
#include <initializer_list>
#include <string_view>

namespace flashdraft::serving {

// Throws UsageError "--model DIR: ..." when dir is not a directory or lacks
// one of the named files. Returns the directory made absolute.
std::filesystem::path require_model_dir(const std::filesystem::path& dir,
                                        std::initializer_list<std::string_view> required_files);

}  // namespace flashdraft::serving
