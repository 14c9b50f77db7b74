#pragma once
// Reading JSON files with errors that name the file.
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace flashdraft::io {

// Whole file as text; throws flashdraft::Error naming the path if unreadable.
std::string read_text_file(const std::filesystem::path& path);

// Parses `text`; `source` names it in errors ("<source>: invalid JSON: ...").
// With reject_duplicate_keys, a key repeated inside one object is an error
// (nlohmann would silently keep the last one, hiding e.g. two tensors that
// claim one name).
nlohmann::json parse_json(std::string_view text, const std::string& source,
                          bool reject_duplicate_keys = false);

// "{...}" / "\"abc\"" / "12", cut to a readable length for error messages.
std::string json_excerpt(const nlohmann::json& value);

}  // namespace flashdraft::io
