#include "cli/chat_prompt.h"

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "core/error.h"

namespace flashdraft::cli {

std::string render_chat_prompt(const serving::ModelFiles& model, const std::optional<std::string>& system,
                               const std::string& user, bool enable_thinking) {
  if (!model.chat_template_error.empty()) throw Error(model.chat_template_error);
  if (!model.chat_template) {
    throw UsageError(
        "--chat: the model has no chat template (no chat_template in tokenizer_config.json "
        "and no chat_template.jinja); drop --chat and write the prompt out in full");
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (system) messages.push_back({{"role", "system"}, {"content", *system}});
  messages.push_back({{"role", "user"}, {"content", user}});
  chat::ChatOptions options;
  options.add_generation_prompt = true;
  // Left undefined unless turned off, as transformers does by default.
  if (!enable_thinking) options.enable_thinking = false;
  // transformers also hands the template the tokenizer's special tokens.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (auto bos = model.tokenizer.bos_token()) extra["bos_token"] = *bos;
  if (auto eos = model.tokenizer.eos_token()) extra["eos_token"] = *eos;
  return chat::apply_chat_template(*model.chat_template, messages, options, extra);
}

}  // namespace flashdraft::cli
