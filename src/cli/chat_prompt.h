#pragma once
// The prompt text for --chat: the model's own chat template rendered over a
// system message (optional) and one user message, ending with the header of
// the assistant's turn.
#include <optional>
#include <string>

#include "serving/engine_builder.h"

namespace flashdraft::cli {

// Throws UsageError when the model directory has no chat template, and
// flashdraft::Error (naming the construct) when the template cannot be used.
std::string render_chat_prompt(const serving::ModelFiles& model, const std::optional<std::string>& system,
                               const std::string& user, bool enable_thinking);

}  // namespace flashdraft::cli
