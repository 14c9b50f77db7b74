#include "chat/chat_template.h"

#include "chat/ast.h"
#include "chat/interpreter.h"
#include "chat/parser.h"
#include "core/error.h"

namespace flashdraft::chat {

ChatTemplate ChatTemplate::parse(const std::string& source) {
  ChatTemplate t;
  t.body_ = std::make_shared<const std::vector<Node>>(parse_template(source));
  return t;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
  if (!body_) throw Error("chat template: render() called on a template that was never parsed");
  if (!context.is_object()) throw Error("chat template: the render context must be a JSON object");
  return render_template(*body_, context);
}

std::string apply_chat_template(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                const ChatOptions& options, const nlohmann::ordered_json& extra_context) {
  if (!messages.is_array()) throw Error("chat template: messages must be a JSON array");
  if (!options.tools.is_null() && !options.tools.is_array()) throw Error("chat template: tools must be a JSON array or null");
  if (!extra_context.is_null() && !extra_context.is_object())
    throw Error("chat template: extra_context must be a JSON object");
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = messages;
  ctx["tools"] = options.tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = options.add_generation_prompt;
  if (options.enable_thinking) ctx["enable_thinking"] = *options.enable_thinking;
  if (extra_context.is_object())
    for (auto it = extra_context.begin(); it != extra_context.end(); ++it) ctx[it.key()] = it.value();
  return tmpl.render(ctx);
}

}  // namespace flashdraft::chat
