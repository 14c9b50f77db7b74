// Request parsing and validation: every bad field is a 400 that names it.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/openai_requests.h"

namespace flashdraft::server {
namespace {

constexpr int64_t kVocab = 100;

// The ApiError `f` throws; fails the test when it throws none.
template <typename F>
ApiError error_of(F f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError thrown";
  return ApiError(0, "");
}

ApiError completion_error(const std::string& body) {
  return error_of([&] { parse_completion_request(body, kVocab); });
}
ApiError chat_error(const std::string& body) {
  return error_of([&] { parse_chat_request(body, kVocab); });
}

TEST(CompletionRequest, ReadsPromptForms) {
  auto r = parse_completion_request(R"({"model":"m","prompt":"hi"})", kVocab);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(*r.prompts[0].text, "hi");
  EXPECT_EQ(*r.model, "m");

  r = parse_completion_request(R"({"prompt":["a","b"]})", kVocab);
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(*r.prompts[1].text, "b");

  r = parse_completion_request(R"({"prompt":[1,2,3]})", kVocab);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_FALSE(r.prompts[0].text);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));

  r = parse_completion_request(R"({"prompt":[[1],[2,3]]})", kVocab);
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].ids, (std::vector<int32_t>{2, 3}));
}

TEST(CompletionRequest, ReadsSamplingFields) {
  auto r = parse_completion_request(
      R"({"prompt":"x","max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":-1,"min_p":0.1,"seed":42,
          "stop":"\n\n","stop_token_ids":[5],"ignore_eos":true,"n":3,"stream":true,
          "stream_options":{"include_usage":true},"presence_penalty":0,"repetition_penalty":1})",
      kVocab);
  const SamplingRequest& s = r.sampling;
  EXPECT_EQ(*s.max_tokens, 7);
  EXPECT_DOUBLE_EQ(*s.temperature, 0.5);
  EXPECT_DOUBLE_EQ(*s.top_p, 0.9);
  EXPECT_EQ(*s.top_k, 0);  // -1: off
  EXPECT_DOUBLE_EQ(*s.min_p, 0.1);
  EXPECT_EQ(*s.seed, 42u);
  EXPECT_EQ(s.stop, (std::vector<std::string>{"\n\n"}));
  EXPECT_EQ(s.stop_token_ids, (std::vector<int32_t>{5}));
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_EQ(s.n, 3);
  EXPECT_TRUE(s.stream);
  EXPECT_TRUE(s.include_usage);
  EXPECT_FALSE(s.adaptive_speculation.has_value());  // absent: the server's setting
}

TEST(CompletionRequest, ReadsThePerRequestSpeculationSwitch) {
  auto r = parse_completion_request(R"({"prompt":"x","adaptive_speculation":false})", kVocab);
  ASSERT_TRUE(r.sampling.adaptive_speculation.has_value());
  EXPECT_FALSE(*r.sampling.adaptive_speculation);
  EXPECT_EQ(resolve_sampling(r.sampling, {}, std::nullopt, 1, 100).adaptive_speculation, false);
  try {
    parse_completion_request(R"({"prompt":"x","adaptive_speculation":"no"})", kVocab);
    ADD_FAILURE() << "a string was taken for the switch";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param().value_or(""), "adaptive_speculation");
  }
}

TEST(CompletionRequest, BadFieldsAreNamed) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"prompt":"x","temperature":"hot"})", "temperature"},
      {R"({"prompt":"x","temperature":-1})", "temperature"},
      {R"({"prompt":"x","top_p":0})", "top_p"},
      {R"({"prompt":"x","top_p":1.5})", "top_p"},
      {R"({"prompt":"x","top_k":-2})", "top_k"},
      {R"({"prompt":"x","min_p":2})", "min_p"},
      {R"({"prompt":"x","max_tokens":0})", "max_tokens"},
      {R"({"prompt":"x","max_tokens":1.5})", "max_tokens"},
      {R"({"prompt":"x","n":0})", "n"},
      {R"({"prompt":"x","stop":[""]})", "stop"},
      {R"({"prompt":"x","stop":[1]})", "stop"},
      {R"({"prompt":"x","stop_token_ids":[100]})", "stop_token_ids[0]"},
      {R"({"prompt":"x","stream_options":{"include_usage":true}})", "stream_options"},
      {R"({"prompt":"x","stream":true,"stream_options":{"include_usage":1}})", "stream_options.include_usage"},
      {R"({"prompt":"x","seed":"s"})", "seed"},
      {R"({"prompt":"x","model":3})", "model"},
      {R"({"prompt":[1,-1]})", "prompt[1]"},
      {R"({"prompt":[[1],[]]})", "prompt[1]"},
      {R"({"prompt":""})", "prompt"},
      {R"({"prompt":{}})", "prompt"},
      {R"({"max_tokens":3})", "prompt"},
  };
  for (const Case& c : cases) {
    ApiError e = completion_error(c.body);
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.param().value_or("<none>"), c.param) << c.body << " -> " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.param), std::string::npos) << e.what();
  }
}

TEST(CompletionRequest, UnsupportedFieldsSaySo) {
  for (const char* field : {R"("echo":true)", R"("best_of":2)", R"("suffix":"x")", R"("prompt_logprobs":1)",
                            R"("guided_json":{})", R"("response_format":{"type":"json_schema"})"}) {
    ApiError e = completion_error(std::string(R"({"prompt":"x",)") + field + "}");
    EXPECT_EQ(e.status(), 400) << field;
    EXPECT_NE(std::string(e.what()).find("not supported"), std::string::npos) << e.what();
  }
}

TEST(CompletionRequest, ReadsPenaltiesLogitBiasAndLogprobs) {
  auto r = parse_completion_request(
      R"({"prompt":"x","presence_penalty":0.5,"frequency_penalty":-1,"repetition_penalty":1.1,
          "logit_bias":{"5":1.5,"7":-250,"99":300},"logprobs":3})",
      kVocab);
  const SamplingRequest& s = r.sampling;
  EXPECT_DOUBLE_EQ(*s.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(*s.frequency_penalty, -1);
  EXPECT_DOUBLE_EQ(*s.repetition_penalty, 1.1);
  // Clamped to [-100, 100], as OpenAI documents and vLLM does.
  EXPECT_EQ(s.logit_bias, (std::vector<std::pair<int32_t, float>>{{5, 1.5f}, {7, -100.0f}, {99, 100.0f}}));
  EXPECT_EQ(s.logprobs, 3);
  const engine::SamplingParams p = resolve_sampling(s, {}, std::nullopt, 1, 100);
  EXPECT_DOUBLE_EQ(p.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(p.repetition_penalty, 1.1);
  EXPECT_EQ(p.logit_bias.size(), 3u);
  EXPECT_EQ(p.logprobs, 3);
  EXPECT_NO_THROW(engine::validate(p));
  // Absent: the model's default (generation_config.json's repetition_penalty) stays.
  engine::SamplingParams defaults;
  defaults.repetition_penalty = 1.05;
  EXPECT_DOUBLE_EQ(resolve_sampling(parse_completion_request(R"({"prompt":"x"})", kVocab).sampling, defaults,
                                    std::nullopt, 1, 100)
                       .repetition_penalty,
                   1.05);
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x"})", kVocab).sampling.logprobs);
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","logprobs":0})", kVocab).sampling.logprobs, 0);
}

TEST(CompletionRequest, BadPenaltiesAndLogprobsAreNamed) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"prompt":"x","presence_penalty":2.5})", "presence_penalty"},
      {R"({"prompt":"x","frequency_penalty":-3})", "frequency_penalty"},
      {R"({"prompt":"x","repetition_penalty":0})", "repetition_penalty"},
      {R"({"prompt":"x","logit_bias":{"a":1}})", "logit_bias.a"},
      {R"({"prompt":"x","logit_bias":{"100":1}})", "logit_bias.100"},
      {R"({"prompt":"x","logit_bias":{"-1":1}})", "logit_bias.-1"},
      {R"({"prompt":"x","logit_bias":{"3":"up"}})", "logit_bias.3"},
      {R"({"prompt":"x","logit_bias":[1]})", "logit_bias"},
      {R"({"prompt":"x","logprobs":21})", "logprobs"},
      {R"({"prompt":"x","logprobs":-1})", "logprobs"},
      {R"({"prompt":"x","logprobs":true})", "logprobs"},
  };
  for (const Case& c : cases) {
    ApiError e = completion_error(c.body);
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.param().value_or("<none>"), c.param) << c.body << " -> " << e.what();
  }
}

TEST(ChatRequest, ReadsLogprobs) {
  const std::string m = R"("messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(parse_chat_request("{" + m + R"(,"logprobs":true,"top_logprobs":5})", kVocab).sampling.logprobs, 5);
  EXPECT_EQ(parse_chat_request("{" + m + R"(,"logprobs":true})", kVocab).sampling.logprobs, 0);
  EXPECT_FALSE(parse_chat_request("{" + m + R"(,"logprobs":false,"top_logprobs":0})", kVocab).sampling.logprobs);
  EXPECT_FALSE(parse_chat_request("{" + m + "}", kVocab).sampling.logprobs);
}

TEST(RequestBody, MalformedJsonIs400) {
  EXPECT_EQ(completion_error("{\"prompt\": ").status(), 400);
  EXPECT_EQ(completion_error("[1,2]").status(), 400);
  EXPECT_EQ(chat_error("").status(), 400);
}

TEST(RequestBody, DeepNestingIs400NotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(completion_error("{\"prompt\": " + deep + "}").status(), 400);
  // Brackets inside strings are text, not nesting.
  EXPECT_NO_THROW(parse_completion_request("{\"prompt\": \"" + std::string(1000, '[') + "\"}", kVocab));
  EXPECT_NO_THROW(parse_completion_request("{\"prompt\": \"\\\"[[[\"}", kVocab));
}

TEST(ChatRequest, ReadsMessagesToolsAndKwargs) {
  auto r = parse_chat_request(R"({
    "model":"m",
    "messages":[
      {"role":"system","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"f","arguments":"{\"z\": 1, \"a\": 2}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"42"}],
    "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
    "chat_template_kwargs":{"enable_thinking":false},
    "max_completion_tokens":9})",
                              kVocab);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  // Arguments reach the template as an object, keys in the order sent.
  const Json& args = r.messages[2]["tool_calls"][0]["function"]["arguments"];
  ASSERT_TRUE(args.is_object());
  EXPECT_EQ(args.dump(), R"({"z":1,"a":2})");
  EXPECT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tool_choice, ToolChoice::Auto);  // tools given, no tool_choice: auto (vLLM)
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
  EXPECT_EQ(*r.sampling.max_tokens, 9);
  EXPECT_TRUE(r.add_generation_prompt);
}

TEST(ChatRequest, ReadsToolChoice) {
  const std::string head = R"({"messages":[{"role":"user","content":"x"}],
    "tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],)";
  EXPECT_EQ(parse_chat_request(head + R"("tool_choice":"none"})", kVocab).tool_choice, ToolChoice::None);
  EXPECT_EQ(parse_chat_request(head + R"("tool_choice":"auto"})", kVocab).tool_choice, ToolChoice::Auto);
  EXPECT_EQ(parse_chat_request(head + R"("tool_choice":"required"})", kVocab).tool_choice, ToolChoice::Required);
  auto r = parse_chat_request(head + R"("tool_choice":{"type":"function","function":{"name":"g"}}})", kVocab);
  EXPECT_EQ(r.tool_choice, ToolChoice::Function);
  EXPECT_EQ(r.tool_choice_function, "g");
  EXPECT_TRUE(r.parallel_tool_calls);  // OpenAI's default
  EXPECT_FALSE(parse_chat_request(head + R"("parallel_tool_calls":false})", kVocab).parallel_tool_calls);
  // "none" needs no tools.
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"none"})", kVocab).tool_choice,
            ToolChoice::None);
}

TEST(ChatRequest, BadFieldsAreNamed) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "messages"},
      {R"({"messages":[]})", "messages"},
      {R"({"messages":"hi"})", "messages"},
      {R"({"messages":[{"content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"wizard","content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"user"}]})", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":5}]})", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", "messages[0].content[0].type"},
      {R"({"messages":[{"role":"tool","content":"x"}]})", "messages[0].tool_call_id"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{"}}]}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})", "tools[0].function"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"auto"})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"sometimes"})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{"name":"f"}}})",
       "tool_choice.function.name"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],
           "tool_choice":{"type":"function","function":{"name":"g"}}})",
       "tool_choice.function.name"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],
           "tool_choice":{"type":"function"}})",
       "tool_choice.function"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],
           "tool_choice":{"type":"tool","function":{"name":"f"}}})",
       "tool_choice.type"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":7})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":2})", "logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", "top_logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})", "top_logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":-1})", "top_logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_completion_tokens":-3})", "max_completion_tokens"},
      {R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":[]})", "chat_template_kwargs"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}})",
       "response_format.type"},
  };
  for (const Case& c : cases) {
    ApiError e = chat_error(c.body);
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.param().value_or("<none>"), c.param) << c.body << " -> " << e.what();
  }
}

TEST(ResolveSampling, RequestOverridesDefaults) {
  engine::SamplingParams defaults;
  defaults.temperature = 0.6;
  defaults.top_k = 20;
  defaults.top_p = 0.95;
  SamplingRequest r;
  r.temperature = 0;
  r.stop = {"x"};
  auto p = resolve_sampling(r, defaults, std::nullopt, 10, 100);
  EXPECT_EQ(p.temperature, 0);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_DOUBLE_EQ(p.top_p, 0.95);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"x"}));
  EXPECT_EQ(p.max_tokens, 90);  // no max_tokens anywhere: what the context leaves
  EXPECT_EQ(resolve_sampling(r, defaults, 32, 10, 100).max_tokens, 32);
  EXPECT_EQ(resolve_sampling(r, defaults, 500, 10, 100).max_tokens, 90);
  r.max_tokens = 5;
  EXPECT_EQ(resolve_sampling(r, defaults, 32, 10, 100).max_tokens, 5);
}

TEST(ResolveSampling, ContextOverflowIs400) {
  SamplingRequest r;
  EXPECT_EQ(error_of([&] { resolve_sampling(r, {}, std::nullopt, 100, 100); }).param(), "prompt");
  r.max_tokens = 91;
  ApiError e = error_of([&] { resolve_sampling(r, {}, std::nullopt, 10, 100); });
  EXPECT_EQ(e.param(), "max_tokens");
  EXPECT_NE(std::string(e.what()).find("maximum context length is 100"), std::string::npos);
}

TEST(ApiErrorBody, ShapedAsOpenAI) {
  Json body = invalid_field("temperature", "must be >= 0").body();
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["message"], "temperature: must be >= 0");
  EXPECT_TRUE(body["error"]["code"].is_null());
  EXPECT_EQ(ApiError(401, "no").body()["error"]["type"], "authentication_error");
}

}  // namespace
}  // namespace flashdraft::server
