#pragma once
// The drafter settings, from either spelling: --draft-model D
// [--num-speculative-tokens N], or vLLM's --speculative-config JSON
// ('{"method":"dflash","model":"D","num_speculative_tokens":15}').
// Draft lengths are adaptive unless "adaptive": false (generate:
// --no-adaptive-speculation): num_speculative_tokens is then drafted every
// step, otherwise it is the most a request drafts. "quantization": "fp8"
// (vLLM's key; --speculative-draft-model-quantization fp8, SGLang's flag)
// rounds the drafter's weights to fp8 at load (model/dflash_drafter.h).
#include <optional>
#include <string>
#include <string_view>

namespace flashdraft::serving {

struct SpeculativeSetup {
  std::string draft_model;                    // empty: plain decoding
  std::optional<int> num_speculative_tokens;  // none: the drafter's block_size - 1
  bool adaptive = true;                       // choose each request's draft length every step
  std::string revision = "main";              // when draft_model is a hub id (vLLM's "revision" key)
  std::string quantization;                   // "" (none) or "fp8"
};

// Throws UsageError (one line, naming the flag) on bad JSON, a method other
// than "dflash", a missing or non-string model, a num_speculative_tokens that
// is not an integer >= 1, a revision that is not a non-empty string, a
// quantization other than "fp8" or null, or a key we do not know.
SpeculativeSetup parse_speculative_config(std::string_view json);

// The setup from the flags as given (nullopt: the flag is absent). Throws
// UsageError on a conflicting or incomplete combination, and when the
// drafter directory (which must hold config.json) is missing; the drafter
// path comes back absolute. A drafter given as a hub id (ORG/NAME) resolves
// through the Hugging Face cache (serving/model_dir.h resolve_model), its
// weights fetched only when drafter_weights.
SpeculativeSetup speculative_setup(const std::optional<std::string>& draft_model,
                                   const std::optional<int>& num_speculative_tokens,
                                   const std::optional<std::string>& speculative_config,
                                   bool drafter_weights = true,
                                   const std::optional<std::string>& draft_quantization = std::nullopt);

}  // namespace flashdraft::serving
