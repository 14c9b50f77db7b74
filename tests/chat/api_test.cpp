// The public API: context building in apply_chat_template, errors, reuse.
#include <gtest/gtest.h>

#include <ctime>

#include "chat/chat_template.h"
#include "core/error.h"

namespace flashdraft::chat {
namespace {

using Json = nlohmann::ordered_json;

const char* kProbe =
    "{{ messages|length }}|{{ enable_thinking is defined }}|{{ enable_thinking }}|{{ add_generation_prompt }}|"
    "{{ tools is none }}|{{ documents is none }}|{{ eos_token }}|{{ bos_token is defined }}";

TEST(ApplyChatTemplate, BuildsContextLikeTransformers) {
  const ChatTemplate t = ChatTemplate::parse(kProbe);
  const Json messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
  EXPECT_EQ(apply_chat_template(t, messages, {}), "1|False||True|True|True||False");
  ChatOptions o;
  o.add_generation_prompt = false;
  o.enable_thinking = false;
  o.tools = Json::array();
  EXPECT_EQ(apply_chat_template(t, messages, o, {{"eos_token", "<|im_end|>"}}), "1|True|False|False|False|True|<|im_end|>|False");
}

TEST(ApplyChatTemplate, ExtraContextWins) {
  const ChatTemplate t = ChatTemplate::parse("{{ add_generation_prompt }}{{ custom }}");
  EXPECT_EQ(apply_chat_template(t, Json::array(), {}, {{"add_generation_prompt", "X"}, {"custom", 7}}), "X7");
}

TEST(ApplyChatTemplate, RejectsBadArguments) {
  const ChatTemplate t = ChatTemplate::parse("x");
  EXPECT_THROW(apply_chat_template(t, Json::object(), {}), Error);
  ChatOptions o;
  o.tools = "not a list";
  EXPECT_THROW(apply_chat_template(t, Json::array(), o), Error);
  EXPECT_THROW(t.render(Json::array()), Error);
}

TEST(ChatTemplateRender, KeepsDictKeyOrderInToJson) {
  // Python dicts keep insertion order; the tools JSON the model sees depends on it.
  const ChatTemplate t = ChatTemplate::parse("{{ tool | tojson }}");
  const Json ctx = Json::parse(R"({"tool": {"type": "function", "function": {"name": "f", "b": 1, "a": 2}}})");
  EXPECT_EQ(t.render(ctx), R"({"type": "function", "function": {"name": "f", "b": 1, "a": 2}})");
}

TEST(ChatTemplateRender, AcceptsPlainNlohmannJson) {
  const ChatTemplate t = ChatTemplate::parse("{{ a }}-{{ b.c }}");
  const nlohmann::json plain = {{"a", 1}, {"b", {{"c", "x"}}}};
  EXPECT_EQ(t.render(plain), "1-x");
}

TEST(ChatTemplateRender, RaiseExceptionMessageIsVerbatim) {
  const ChatTemplate t = ChatTemplate::parse("ok\n{% if not messages %}{{ raise_exception('Conversation is empty.') }}{% endif %}");
  try {
    t.render({{"messages", Json::array()}});
    FAIL() << "expected an exception";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Conversation is empty.");
  }
  EXPECT_EQ(t.render({{"messages", Json::array({1})}}), "ok\n");
}

TEST(ChatTemplateRender, RuntimeErrorsNameTheLine) {
  const ChatTemplate t = ChatTemplate::parse("a\n{% for m in messages %}\n{{ m.content + 1 }}\n{% endfor %}");
  try {
    t.render({{"messages", Json::parse(R"([{"content": "x"}])")}});
    FAIL() << "expected an exception";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "chat template line 3: unsupported operand type(s) for +: 'str' and 'int'");
  }
  const ChatTemplate u = ChatTemplate::parse("\n\n{{ nope.attr }}");
  EXPECT_THROW(
      {
        try {
          u.render(Json::object());
        } catch (const Error& e) {
          EXPECT_EQ(std::string(e.what()), "chat template line 3: 'nope' is undefined");
          throw;
        }
      },
      Error);
}

TEST(ChatTemplateRender, TemplateIsReusableAndConst) {
  const ChatTemplate t = ChatTemplate::parse("{% set ns = namespace(n=0) %}{% for x in xs %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}");
  EXPECT_EQ(t.render({{"xs", {1, 2, 3}}}), "6");
  EXPECT_EQ(t.render({{"xs", {10}}}), "10");
  ChatTemplate copy = t;
  EXPECT_EQ(copy.render({{"xs", Json::array()}}), "0");
}

TEST(ChatTemplateRender, StrftimeNowFormatsTheLocalTime) {
  // Llama 3 templates print today's date with strftime_now; the value depends on the clock.
  const ChatTemplate t = ChatTemplate::parse("{{ strftime_now('%Y') }}|{{ strftime_now('%d %b %Y')|length }}");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  EXPECT_EQ(t.render(Json::object()), std::to_string(1900 + tm.tm_year) + "|11");
}

TEST(ChatTemplateRender, UnparsedTemplateFails) {
  const ChatTemplate t{};
  EXPECT_THROW(t.render(Json::object()), Error);
}

}  // namespace
}  // namespace flashdraft::chat
