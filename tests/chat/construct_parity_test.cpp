// Small templates, one Jinja construct each, against Jinja2's renderings.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"
#include "golden_cases.h"

namespace flashdraft::chat::testing {
namespace {

class ConstructParity : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ConstructParity, MatchesJinja2) {
  const GoldenCase& c = GetParam();
  const ChatTemplate tmpl = ChatTemplate::parse(c.at("template").get<std::string>());
  if (!c.contains("expected_error")) {
    EXPECT_EQ(tmpl.render(c.at("context")), c.at("expected").get<std::string>());
    return;
  }
  const std::string jinja_error = c.at("expected_error").get<std::string>();
  try {
    const std::string out = tmpl.render(c.at("context"));
    ADD_FAILURE() << "rendered '" << out << "' but Jinja2 failed with: " << jinja_error;
  } catch (const Error& e) {
    // raise_exception's message must reach the caller verbatim.
    if (c.at("error_type") == "TemplateError") {
      EXPECT_EQ(std::string(e.what()), jinja_error);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, ConstructParity, ::testing::ValuesIn(load_cases("construct_cases.json")),
                         [](const auto& info) { return case_name(info.param); });

}  // namespace
}  // namespace flashdraft::chat::testing
