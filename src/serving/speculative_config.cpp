#include "serving/speculative_config.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>

#include "core/error.h"
#include "serving/model_dir.h"

namespace flashdraft::serving {
namespace {

std::filesystem::path require_drafter_dir(const std::string& flag, const std::string& dir, const std::string& revision,
                                          bool weights) {
  std::error_code ec;
  const std::filesystem::path abs =
      resolve_model(flag, dir, ModelNeeds{.tokenizer = false, .weights = weights}, revision);
  if (!std::filesystem::is_directory(abs, ec)) {
    throw UsageError(fmt::format("{}: no such directory: {}", flag, abs.string()));
  }
  if (!std::filesystem::is_regular_file(abs / "config.json", ec)) {
    throw UsageError(fmt::format("{}: no config.json in {}", flag, abs.string()));
  }
  return abs;
}

}  // namespace

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
  // flashdraft's own key (vLLM has none for it), taken out before the check
  // of vLLM's keys below.
  std::optional<bool> adaptive;
  if (auto a = j.find("adaptive"); a != j.end()) {
    if (!a->is_boolean()) {
      throw UsageError(fmt::format("{}: \"adaptive\" must be true or false, got {}", kFlag, a->dump()));
    }
    adaptive = a->get<bool>();
    j.erase(a);
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "method" && key != "model" && key != "num_speculative_tokens" && key != "revision" &&
        key != "quantization") {
      throw UsageError(fmt::format(
          "{}: unknown key \"{}\" (supported: method, model, num_speculative_tokens, revision, quantization)", kFlag,
          key));
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
    throw UsageError(
        fmt::format("{}: \"model\" must be the drafter's directory or hub id, a non-empty string", kFlag));
  }
  SpeculativeSetup setup;
  setup.draft_model = model->get<std::string>();
  if (adaptive) setup.adaptive = *adaptive;
  if (auto n = j.find("num_speculative_tokens"); n != j.end()) {
    if (!n->is_number_integer() || n->get<int64_t>() < 1 || n->get<int64_t>() > 1'000'000) {
      throw UsageError(fmt::format("{}: \"num_speculative_tokens\" must be an integer >= 1, got {}", kFlag, n->dump()));
    }
    setup.num_speculative_tokens = n->get<int>();
  }
  if (auto r = j.find("revision"); r != j.end()) {
    if (!r->is_string() || r->get<std::string>().empty()) {
      throw UsageError(fmt::format("{}: \"revision\" must be a branch, tag or commit name, got {}", kFlag, r->dump()));
    }
    setup.revision = r->get<std::string>();
  }
  if (auto q = j.find("quantization"); q != j.end() && !q->is_null()) {
    if (!q->is_string() || q->get<std::string>() != "fp8") {
      throw UsageError(fmt::format(
          "{}: \"quantization\" must be \"fp8\" (the drafter's weights rounded to fp8 at load) or null, got {}",
          kFlag, q->dump()));
    }
    setup.quantization = "fp8";
  }
  return setup;
}

SpeculativeSetup speculative_setup(const std::optional<std::string>& draft_model,
                                   const std::optional<int>& num_speculative_tokens,
                                   const std::optional<std::string>& speculative_config, bool drafter_weights,
                                   const std::optional<std::string>& draft_quantization) {
  if (draft_quantization && *draft_quantization != "fp8")
    throw UsageError(fmt::format("--speculative-draft-model-quantization: expected fp8, got {}", *draft_quantization));
  if (speculative_config && draft_quantization) {
    throw UsageError(
        "--speculative-config sets the drafter's quantization itself (\"quantization\": \"fp8\"); "
        "do not combine it with --speculative-draft-model-quantization");
  }
  if (draft_quantization && !draft_model)
    throw UsageError("--speculative-draft-model-quantization needs --draft-model DIR (the DFlash drafter)");
  if (speculative_config && (draft_model || num_speculative_tokens)) {
    throw UsageError(
        "--speculative-config already names the drafter and num_speculative_tokens; "
        "do not combine it with --draft-model or --num-speculative-tokens");
  }
  SpeculativeSetup setup;
  if (speculative_config) {
    setup = parse_speculative_config(*speculative_config);
    setup.draft_model =
        require_drafter_dir("--speculative-config model", setup.draft_model, setup.revision, drafter_weights).string();
    return setup;
  }
  if (num_speculative_tokens && !draft_model)
    throw UsageError("--num-speculative-tokens needs --draft-model DIR (the DFlash drafter)");
  if (num_speculative_tokens && *num_speculative_tokens < 1) {
    throw UsageError(fmt::format("--num-speculative-tokens: must be >= 1, got {}", *num_speculative_tokens));
  }
  if (draft_model) {
    setup.draft_model = require_drafter_dir("--draft-model", *draft_model, "main", drafter_weights).string();
    setup.num_speculative_tokens = num_speculative_tokens;
    if (draft_quantization) setup.quantization = *draft_quantization;
  }
  return setup;
}

}  // namespace flashdraft::serving
