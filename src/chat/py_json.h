#pragma once
// Python's json.dumps, because transformers replaces Jinja's tojson with
// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)
// and the model saw exactly those bytes in training.
#include <optional>
#include <string>

#include "chat/value.h"

namespace flashdraft::chat::py {

struct DumpsOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // already expanded: an int indent becomes that many spaces
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
};

std::string json_dumps(const Json& j, const DumpsOptions& options);

}  // namespace flashdraft::chat::py
