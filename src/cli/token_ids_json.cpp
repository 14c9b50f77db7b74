#include "cli/token_ids_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace flashdraft::cli {

std::vector<int32_t> parse_token_ids(std::string_view text, std::string_view flag, int64_t vocab_size) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    throw UsageError(fmt::format("{}: expected a JSON array of token ids such as [1,2,3], got '{}'", flag, text));
  }
  std::vector<int32_t> ids;
  ids.reserve(parsed.size());
  for (size_t i = 0; i < parsed.size(); ++i) {
    const nlohmann::json& v = parsed[i];
    if (!v.is_number_integer()) {
      throw UsageError(fmt::format("{}: element {} is {}, expected an integer token id", flag, i, v.dump()));
    }
    int64_t id = v.get<int64_t>();
    if (id < 0 || id >= vocab_size) {
      throw UsageError(
          fmt::format("{}: token id {} (element {}) is outside the vocabulary [0, {})", flag, id, i, vocab_size));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::string format_token_ids(const std::vector<int32_t>& ids) { return fmt::format("[{}]", fmt::join(ids, ",")); }

}  // namespace flashdraft::cli
