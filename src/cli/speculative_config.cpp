#include "cli/speculative_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace flashdraft::cli {

SpeculativeSetup parse_speculative_config(std::string_view text) {
  constexpr const char* kFlag = "--speculative-config";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(
        fmt::format("{}: not valid JSON ({}); expected e.g. "
                    "'{{\"method\":\"dflash\",\"model\":\"DIR\",\"num_speculative_tokens\":15}}'",
                    kFlag, e.what()));
  }
  if (!j.is_object()) throw UsageError(fmt::format("{}: expected a JSON object, got {}", kFlag, j.dump()));
  for (const auto& [key, value] : j.items()) {
    if (key != "method" && key != "model" && key != "num_speculative_tokens") {
      throw UsageError(
          fmt::format("{}: unknown key \"{}\" (supported: method, model, num_speculative_tokens)", kFlag, key));
    }
  }
  auto method = j.find("method");
  if (method == j.end() || !method->is_string()) {
    throw UsageError(fmt::format("{}: \"method\" must be given as a string; only \"dflash\" is supported", kFlag));
  }
  if (method->get<std::string>() != "dflash") {
    throw UsageError(fmt::format("{}: unknown method {}; only \"dflash\" is supported", kFlag, method->dump()));
  }
  auto model = j.find("model");
  if (model == j.end() || !model->is_string() || model->get<std::string>().empty()) {
    throw UsageError(fmt::format("{}: \"model\" must be the drafter's directory, a non-empty string", kFlag));
  }
  SpeculativeSetup setup;
  setup.draft_model = model->get<std::string>();
  if (auto n = j.find("num_speculative_tokens"); n != j.end()) {
    if (!n->is_number_integer() || n->get<int64_t>() < 1 || n->get<int64_t>() > 1'000'000) {
      throw UsageError(fmt::format("{}: \"num_speculative_tokens\" must be an integer >= 1, got {}", kFlag, n->dump()));
    }
    setup.num_speculative_tokens = n->get<int>();
  }
  return setup;
}

}  // namespace flashdraft::cli
