// The server over the scripted generator: lifecycle, errors, and the chat
// features a tiny model cannot show (tool calls, reasoning), streamed and not.
#include <gtest/gtest.h>

#include <thread>

#include "scripted_generator.h"
#include "server_fixture.h"

namespace flashdraft::server::test {
namespace {

using nlohmann::json;

json user(const std::string& text) { return json::array({{{"role", "user"}, {"content", text}}}); }

const json kWeatherTool = {
    {"type", "function"},
    {"function",
     {{"name", "get_weather"},
      {"description", "Current weather of a city"},
      {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}}}};

// The tool calls of a streamed chat answer (one choice) as a client
// accumulates them, checking each delta's shape on the way.
struct StreamedCalls {
  std::vector<json> calls;  // {"id", "type", "function": {"name", "arguments"}}
  std::string content, finish;
  int argument_deltas = 0;
};

StreamedCalls streamed_calls(const std::string& body) {
  StreamedCalls out;
  for (const json& e : sse_events(body)) {
    if (e["choices"].empty()) continue;
    const json& c = e["choices"][0];
    if (!c["finish_reason"].is_null()) out.finish = c["finish_reason"];
    if (c["delta"].contains("content")) out.content += c["delta"]["content"].get<std::string>();
    if (!c["delta"].contains("tool_calls")) continue;
    EXPECT_EQ(c["delta"]["tool_calls"].size(), 1u);
    const json& d = c["delta"]["tool_calls"][0];
    const size_t index = d["index"].get<size_t>();
    if (d.contains("id")) {  // a call's first delta
      EXPECT_EQ(index, out.calls.size());
      EXPECT_EQ(d["type"], "function");
      EXPECT_EQ(d["function"]["arguments"], "");
      EXPECT_TRUE(d["function"]["name"].is_string());
      out.calls.push_back(d);
    } else {
      EXPECT_FALSE(d["function"].contains("name"));
      EXPECT_LT(index, out.calls.size());
      if (index >= out.calls.size()) continue;
      out.calls[index]["function"]["arguments"] =
          out.calls[index]["function"]["arguments"].get<std::string>() + d["function"]["arguments"].get<std::string>();
      ++out.argument_deltas;
    }
  }
  for (json& call : out.calls) call.erase("index");
  return out;
}

ServerOptions parsers() {
  ServerOptions o;
  o.enable_auto_tool_choice = true;
  o.tool_call_parser = "hermes";
  o.reasoning_parser = "qwen3";
  return o;
}

TEST(ServerLifecycle, HealthIs503WhileLoadingThen200) {
  TestServer s(nullptr);
  EXPECT_EQ(http_get(s.port, "/health").status, 503);
  HttpReply r = http_post(s.port, "/v1/completions", json{{"prompt", "x"}});
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("loading"), std::string::npos);
  EXPECT_EQ(http_get(s.port, "/version").status, 200);  // answers while loading
  s.server->set_ready(scripted_model());
  EXPECT_EQ(http_get(s.port, "/health").status, 200);
  EXPECT_EQ(http_post(s.port, "/v1/completions", json{{"prompt", "x"}}).status, 200);
}

TEST(ServerLifecycle, ShutdownFinishesInFlightThenRefuses) {
  TestServer s(scripted_model(std::chrono::milliseconds(20)));
  HttpReply reply;
  std::thread client([&] { reply = http_post(s.port, "/v1/chat/completions", json{{"messages", user("hi")}}); });
  ASSERT_TRUE(eventually([&] { return s.server->active_requests() == 1; }));
  s.server->shutdown(std::chrono::seconds(30));  // grace enough for the request to finish on its own
  client.join();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.json()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(http_get(s.port, "/health").status, 0);  // no longer listening
}

TEST(ServerLifecycle, ShutdownAbortsWhatOutlivesTheGrace) {
  TestServer s(scripted_model(std::chrono::milliseconds(200)));
  HttpReply reply;
  std::thread client([&] {
    reply = http_post(s.port, "/v1/chat/completions", json{{"messages", user("hi")}, {"stream", true}});
  });
  ASSERT_TRUE(eventually([&] { return s.server->active_requests() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  s.server->shutdown(std::chrono::milliseconds(100));
  client.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_EQ(reply.status, 200);
  std::vector<json> events = sse_events(reply.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "abort");
}

TEST(ServerErrors, ApiKey) {
  ServerOptions o;
  o.api_key = "sekret";
  TestServer s(scripted_model(), o);
  HttpReply missing = http_get(s.port, "/v1/models");
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.json()["error"]["type"], "authentication_error");
  EXPECT_EQ(http_get(s.port, "/v1/models", {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(http_post(s.port, "/v1/completions", json{{"prompt", "x"}}).status, 401);
  EXPECT_EQ(http_get(s.port, "/v1/models", {{"Authorization", "Bearer sekret"}}).status, 200);
  EXPECT_EQ(http_get(s.port, "/health").status, 200);  // open, as in vLLM
  EXPECT_EQ(http_get(s.port, "/metrics").status, 200);
}

TEST(ServerErrors, BadRequestsNameTheField) {
  TestServer s(scripted_model());
  HttpReply r = http_post(s.port, "/v1/completions", std::string("{\"prompt\": "));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["type"], "invalid_request_error");
  r = http_post(s.port, "/v1/completions", json{{"prompt", "x"}, {"temperature", -1}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "temperature");
  r = http_post(s.port, "/v1/chat/completions", json{{"messages", user("x")}, {"top_logprobs", 2}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "top_logprobs");
  r = http_post(s.port, "/v1/completions", json{{"prompt", "x"}, {"echo", true}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "echo");
  // Tools need the server's tool parser (vLLM's rule for the default tool_choice "auto").
  r = http_post(s.port, "/v1/chat/completions", json{{"messages", user("x")}, {"tools", json::array({kWeatherTool})}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "tool_choice");
  r = http_post(s.port, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 5000}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "max_tokens");
}

TEST(ServerErrors, UnknownRouteAndModelAre404) {
  TestServer s(scripted_model());
  HttpReply r = http_get(s.port, "/v1/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_TRUE(r.json()["error"]["message"].is_string());
  r = http_post(s.port, "/v1/completions", json{{"model", "gpt-4"}, {"prompt", "x"}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.json()["error"]["code"], "model_not_found");
}

TEST(ServerErrors, LargeBodyIs413) {
  ServerOptions o;
  o.max_request_bytes = 1000;
  TestServer s(scripted_model(), o);
  HttpReply r = http_post(s.port, "/v1/completions", json{{"prompt", std::string(2000, 'a')}});
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(r.json()["error"]["message"].is_string());
}

TEST(ServerErrors, FullIs503) {
  ServerOptions o;
  o.max_pending_requests = 1;
  TestServer s(scripted_model(std::chrono::milliseconds(100)), o);
  std::thread first([&] { http_post(s.port, "/v1/chat/completions", json{{"messages", user("hi")}}); });
  ASSERT_TRUE(eventually([&] { return s.server->active_requests() == 1; }));
  HttpReply r = http_post(s.port, "/v1/chat/completions", json{{"messages", user("hi")}});
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(http_get(s.port, "/health").status, 200);  // still answering
  first.join();
  EXPECT_EQ(http_post(s.port, "/v1/chat/completions", json{{"messages", user("hi")}}).status, 200);
}

TEST(ServerErrors, GarbageNeverCrashes) {
  TestServer s(scripted_model());
  for (const std::string& body : std::vector<std::string>{"", "null", "[]", "{\"prompt\": [[]]}", "{\"prompt\": [1e999]}", "{\"n\": 1e99}",
                                 "{\"messages\": [{\"role\": \"user\", \"content\": [{}]}]}", "\xff\xfe",
                                 "{\"prompt\": " + std::string(200000, '[') + std::string(200000, ']') + "}"}) {
    for (const char* path : {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}) {
      HttpReply r = http_post(s.port, path, body);
      EXPECT_EQ(r.status, 400) << path << " " << body << " -> " << r.body;
    }
  }
  EXPECT_EQ(http_get(s.port, "/health").status, 200);
}

TEST(ServerChat, ReasoningContentWholeAndStreamed) {
  TestServer s(scripted_model(), parsers());
  HttpReply r = http_post(s.port, "/v1/chat/completions", json{{"messages", user("hi")}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = r.json()["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "\nThe user greets me; I greet back.\n");
  EXPECT_EQ(m["content"], "\n\nHello! How can I help you today?");

  r = http_post(s.port, "/v1/chat/completions", json{{"messages", user("hi")}, {"stream", true}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/event-stream");
  std::string reasoning, content;
  for (const json& e : sse_events(r.body)) {
    const json& d = e["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) content += d["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, m["reasoning_content"]);
  EXPECT_EQ(content, m["content"]);

  // Thinking off (the template closes the think block): all content.
  r = http_post(s.port, "/v1/chat/completions",
                json{{"messages", user("hi")}, {"chat_template_kwargs", {{"enable_thinking", false}}}});
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "Hello! How can I help you today?");
  EXPECT_FALSE(r.json()["choices"][0]["message"].contains("reasoning_content"));
}

TEST(ServerChat, ToolCallRoundTrip) {
  TestServer s(scripted_model(), parsers());
  json messages = user("What is the weather in Paris?");
  HttpReply r = http_post(s.port, "/v1/chat/completions",
                          json{{"messages", messages}, {"tools", json::array({kWeatherTool})}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = r.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  const json call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));

  // Streamed as OpenAI streams a call: id, type and name first with empty
  // arguments, then the arguments as they are written; they add up to the whole.
  r = http_post(s.port, "/v1/chat/completions",
                json{{"messages", messages}, {"tools", json::array({kWeatherTool})}, {"stream", true}});
  const StreamedCalls streamed = streamed_calls(r.body);
  ASSERT_EQ(streamed.calls.size(), 1u) << r.body;
  EXPECT_EQ(streamed.calls[0]["function"], call["function"]);
  EXPECT_GT(streamed.argument_deltas, 1);  // the arguments come in pieces, not at the end
  EXPECT_EQ(streamed.finish, "tool_calls");

  // The answer to the tool goes back; the template renders it, the model answers.
  messages.push_back(choice["message"]);
  messages.push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "{\"sky\": \"sunny\", \"c\": 22}"}});
  r = http_post(s.port, "/v1/chat/completions", json{{"messages", messages}, {"tools", json::array({kWeatherTool})}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "It is sunny in Paris, 22 degrees.");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
}

TEST(ServerChat, ToolChoiceRequiredAndNamed) {
  // Neither needs --enable-auto-tool-choice (as in vLLM): the answer is started as a call.
  TestServer s(scripted_model());
  const json messages = user("What is the weather in Paris?");
  const json named = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  for (const json& choice : {json("required"), named}) {
    const json request = {{"messages", messages}, {"tools", json::array({kWeatherTool})}, {"tool_choice", choice}};
    HttpReply r = http_post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    const json c = r.json()["choices"][0];
    // OpenAI and vLLM: "tool_calls" for "required", "stop" for a named function.
    EXPECT_EQ(c["finish_reason"], choice.is_string() ? "tool_calls" : "stop") << choice;
    EXPECT_TRUE(c["stop_reason"].is_null()) << choice;  // the call's end, not a stop string of the request
    EXPECT_TRUE(c["message"]["content"].is_null()) << choice;
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << r.body;
    const json call = c["message"]["tool_calls"][0];
    EXPECT_TRUE(call["id"].get<std::string>().starts_with("chatcmpl-tool-"));
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));

    json stream = request;
    stream["stream"] = true;
    const StreamedCalls streamed = streamed_calls(http_post(s.port, "/v1/chat/completions", stream).body);
    ASSERT_EQ(streamed.calls.size(), 1u) << choice;
    EXPECT_EQ(streamed.calls[0]["function"], call["function"]);
    EXPECT_EQ(streamed.content, "");
    EXPECT_EQ(streamed.finish, c["finish_reason"]);
  }
  // The prompt ends with the forced start of the call: more prompt tokens than "auto".
  TestServer with_parser(scripted_model(), parsers());
  auto prompt_tokens = [&](const json& choice) {
    json body = {{"messages", messages}, {"tools", json::array({kWeatherTool})}, {"tool_choice", choice}};
    return http_post(with_parser.port, "/v1/chat/completions", body).json()["usage"]["prompt_tokens"].get<int>();
  };
  EXPECT_LT(prompt_tokens("auto"), prompt_tokens("required"));
  EXPECT_LT(prompt_tokens("required"), prompt_tokens(named));

  // A named function must be one of the tools; "required" needs tools.
  json bad = {{"messages", messages},
              {"tools", json::array({kWeatherTool})},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}};
  HttpReply r = http_post(s.port, "/v1/chat/completions", bad);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "tool_choice.function.name");
  r = http_post(s.port, "/v1/chat/completions", json{{"messages", messages}, {"tool_choice", "required"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "tool_choice");
}

TEST(ServerChat, ForcedCallTheModelDoesNotWriteIsContent) {
  // The script answers a greeting with text: a forced call it does not
  // complete stays in the content as written, forced start included.
  TestServer s(scripted_model());
  const json tool = {{"type", "function"}, {"function", {{"name", "wave"}}}};
  const json body = {{"messages", user("hi")},
                     {"tools", json::array({tool})},
                     {"tool_choice", "required"},
                     {"chat_template_kwargs", {{"enable_thinking", false}}}};
  HttpReply r = http_post(s.port, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json c = r.json()["choices"][0];
  EXPECT_FALSE(c["message"].contains("tool_calls"));
  EXPECT_EQ(c["finish_reason"], "stop");
  const std::string content = c["message"]["content"];
  EXPECT_TRUE(content.starts_with("<tool_call>\n")) << content;
  EXPECT_NE(content.find("Hello!"), std::string::npos) << content;
}

TEST(ServerChat, NChoicesStopStringAndUsage) {
  TestServer s(scripted_model());
  HttpReply r = http_post(s.port, "/v1/chat/completions",
                          json{{"messages", user("hi")},
                               {"n", 2},
                               {"stop", "How"},
                               {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = r.json();
  ASSERT_EQ(body["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(body["choices"][i]["index"], i);
    EXPECT_EQ(body["choices"][i]["message"]["content"], "Hello! ");
    EXPECT_EQ(body["choices"][i]["finish_reason"], "stop");
    EXPECT_EQ(body["choices"][i]["stop_reason"], "How");
  }
  const json usage = body["usage"];
  EXPECT_GT(usage["prompt_tokens"].get<int>(), 0);
  EXPECT_GT(usage["completion_tokens"].get<int>(), 0);
  EXPECT_EQ(usage["total_tokens"].get<int>(), usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>());

  r = http_post(s.port, "/v1/chat/completions",
                json{{"messages", user("hi")},
                     {"n", 2},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}},
                     {"chat_template_kwargs", {{"enable_thinking", false}}}});
  std::vector<json> events = sse_events(r.body);
  std::string text[2];
  int finishes = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_TRUE(events[i].contains("usage") && events[i]["usage"].is_null());
    const json& c = events[i]["choices"][0];
    if (c["delta"].contains("content")) text[c["index"].get<int>()] += c["delta"]["content"].get<std::string>();
    finishes += c["finish_reason"].is_null() ? 0 : 1;
  }
  EXPECT_EQ(text[0], "Hello! How can I help you today?");
  EXPECT_EQ(text[1], text[0]);
  EXPECT_EQ(finishes, 2);
  EXPECT_TRUE(events.back()["choices"].empty());
  // Each choice: the answer's tokens and the EOS that ended it.
  const size_t answer = http_post(s.port, "/tokenize", json{{"prompt", text[0]}}).json()["tokens"].size();
  EXPECT_EQ(events.back()["usage"]["completion_tokens"].get<size_t>(), 2 * (answer + 1));
  EXPECT_EQ(events.back()["usage"]["prompt_tokens"], usage["prompt_tokens"]);
}

TEST(ServerMisc, ModelsTokenizeDetokenizeVersion) {
  TestServer s(scripted_model());
  json models = http_get(s.port, "/v1/models").json();
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][0]["max_model_len"], 2048);
  json tok = http_post(s.port, "/tokenize", json{{"prompt", "<|im_start|>def f():"}}).json();
  ASSERT_TRUE(tok["tokens"].is_array());
  EXPECT_EQ(tok["tokens"][0], 8189);  // the special token, parsed as such
  EXPECT_EQ(tok["count"], tok["tokens"].size());
  json text = http_post(s.port, "/detokenize", json{{"tokens", tok["tokens"]}}).json();
  EXPECT_EQ(text["prompt"], "<|im_start|>def f():");
  EXPECT_TRUE(http_get(s.port, "/version").json()["version"].is_string());
}

}  // namespace
}  // namespace flashdraft::server::test
