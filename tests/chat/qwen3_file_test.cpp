// The chat_template of the real Qwen3 tokenizer_config.json (fetched by the
// ctest fixture) is the committed one, and renders the golden conversations.
#include <gtest/gtest.h>

#include "qwen3_cases.h"

namespace flashdraft::chat::testing {
namespace {

std::string fetched_template() {
  const Json config = Json::parse(read_file(std::string(FD_QWEN3_TOKENIZER_DIR) + "/tokenizer_config.json"));
  return config.at("chat_template").get<std::string>();
}

TEST(Qwen3TemplateFile, CommittedCopyIsTheRealTemplate) {
  EXPECT_EQ(fetched_template(), read_file(fixture("qwen3_chat_template.jinja")));
}

TEST(Qwen3TemplateFile, RealTemplateMatchesJinja2) {
  const ChatTemplate tmpl = ChatTemplate::parse(fetched_template());
  for (const auto& c : load_cases("qwen3_cases.json")) {
    SCOPED_TRACE(case_name(c));
    check_qwen3_case(tmpl, c);
  }
}

}  // namespace
}  // namespace flashdraft::chat::testing
