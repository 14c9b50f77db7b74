#include "cli/chat_prompt.h"

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "core/error.h"

namespace flashdraft::cli {

std::string render_chat_prompt(const tokenizer::Tokenizer& tokenizer, const std::optional<std::string>& system,
                               const std::string& user, bool enable_thinking) {
  const std::string& source = tokenizer.chat_template();
  if (source.empty()) {
    throw UsageError(
        "--chat: the model has no chat template (no chat_template in tokenizer_config.json "
        "and no chat_template.jinja); drop --chat and write the prompt out in full");
  }
  chat::ChatTemplate tmpl = chat::ChatTemplate::parse(source);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (system) messages.push_back({{"role", "system"}, {"content", *system}});
  messages.push_back({{"role", "user"}, {"content", user}});
  chat::ChatOptions options;
  options.add_generation_prompt = true;
  // Left undefined unless turned off, as transformers does by default.
  if (!enable_thinking) options.enable_thinking = false;
  // transformers also hands the template the tokenizer's special tokens.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (auto bos = tokenizer.bos_token()) extra["bos_token"] = *bos;
  if (auto eos = tokenizer.eos_token()) extra["eos_token"] = *eos;
  return chat::apply_chat_template(tmpl, messages, options, extra);
}

}  // namespace flashdraft::cli
