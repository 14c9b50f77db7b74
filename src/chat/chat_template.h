#pragma once
// Chat templates: the Jinja2 subset Hugging Face chat templates use, rendered
// byte-for-byte like transformers' apply_chat_template (Jinja2 sandbox with
// trim_blocks and lstrip_blocks, json.dumps-based tojson, raise_exception).
//
// Values are nlohmann::ordered_json so that dict key order survives: Python
// dicts keep insertion order and `tool | tojson` must print keys in the order
// the caller gave them. A plain nlohmann::json converts implicitly, but its
// keys come out sorted.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flashdraft::chat {

struct Node;

class ChatTemplate {
 public:
  // Throws flashdraft::Error "chat template line N: ..." on syntax errors and
  // on constructs this engine does not implement (unknown filter, test, tag...).
  static ChatTemplate parse(const std::string& source);

  // context: the template's variables (messages, tools, add_generation_prompt, ...).
  // Throws flashdraft::Error on runtime errors; raise_exception(msg) throws
  // flashdraft::Error whose what() is exactly msg.
  std::string render(const nlohmann::ordered_json& context) const;

 private:
  std::shared_ptr<const std::vector<Node>> body_;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // left undefined in the template when unset
  nlohmann::ordered_json tools = nullptr;
};

// Builds the context exactly as transformers does (messages, tools,
// documents=None, add_generation_prompt, enable_thinking when set) and
// renders. extra_context (bos_token, eos_token, ...) is merged last and wins.
std::string apply_chat_template(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                const ChatOptions& options, const nlohmann::ordered_json& extra_context = {});

}  // namespace flashdraft::chat
