#pragma once
// Renders one golden Qwen3 conversation through apply_chat_template, the way
// a caller passes it (messages + ChatOptions + special tokens as extra context).
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"
#include "golden_cases.h"

namespace flashdraft::chat::testing {

inline void check_qwen3_case(const ChatTemplate& tmpl, const GoldenCase& c) {
  ChatOptions options;
  options.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
  if (c.contains("enable_thinking")) options.enable_thinking = c.at("enable_thinking").get<bool>();
  options.tools = c.at("tools");
  if (c.contains("expected_error")) {
    EXPECT_THROW(apply_chat_template(tmpl, c.at("messages"), options, c.at("extra_context")), Error)
        << "Jinja2 failed with: " << c.at("expected_error").get<std::string>();
    return;
  }
  const std::string got = apply_chat_template(tmpl, c.at("messages"), options, c.at("extra_context"));
  EXPECT_EQ(got, c.at("expected").get<std::string>());
}

}  // namespace flashdraft::chat::testing
