// The server over the real engine and the shipped models on the CPU:
// greedy output equals `flashdraft generate` under concurrent load (with and
// without the DFlash drafter), and a client that goes away aborts its
// request and frees its KV blocks.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "../cli/subprocess.h"
#include "server_fixture.h"

namespace flashdraft::server::test {
namespace {

using nlohmann::json;

constexpr int kMaxTokens = 48;

const std::vector<std::string> kPrompts = {
    "def fibonacci(n):\n",
    "import os\n\ndef list_files(path):\n",
    "class Stack:\n    def __init__(self):\n",
    "def is_prime(n):\n    \"\"\"Return True if n is prime.\"\"\"\n",
};

std::string generate(const std::string& prompt, bool drafter, bool chat) {
  std::vector<std::string> args = {"generate", "--model", shipped_model_dir(), "--device", "cpu", "--prompt", prompt,
                                   "--temperature", "0", "--max-tokens", std::to_string(kMaxTokens)};
  if (drafter) args.insert(args.end(), {"--draft-model", shipped_drafter_dir()});
  if (chat) args.push_back("--chat");
  cli::test::Ran ran = cli::test::run_flashdraft(args);
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  return ran.out;
}

// What each kind of request says, concatenated from the body or the stream.
std::string completion_text(int port, const std::string& prompt, bool stream) {
  json body = {{"prompt", prompt}, {"temperature", 0}, {"max_tokens", kMaxTokens}, {"stream", stream}};
  HttpReply r = http_post(port, "/v1/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  if (!stream) return r.json()["choices"][0]["text"];
  std::string text;
  for (const json& e : sse_events(r.body)) text += e["choices"][0]["text"].get<std::string>();
  return text;
}

std::string chat_text(int port, const std::string& prompt) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", prompt}}})},
               {"temperature", 0},
               {"max_tokens", kMaxTokens},
               {"stream", true}};
  HttpReply r = http_post(port, "/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  std::string text;
  for (const json& e : sse_events(r.body)) {
    const json& d = e["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  return text;
}

void expect_greedy_equals_generate(bool drafter) {
  // The CLI's answers, one process per prompt.
  std::vector<std::string> plain, chat;
  for (const std::string& p : kPrompts) {
    plain.push_back(generate(p, drafter, false));
    chat.push_back(generate(p, drafter, true));
    ASSERT_FALSE(plain.back().empty());
  }
  // Every request at once (three per prompt) against an engine that runs
  // four at a time: batching and queueing must not change a token.
  TestServer s(engine_model(drafter, 4));
  std::vector<std::future<std::string>> whole, streamed, chats;
  for (const std::string& p : kPrompts) {
    whole.push_back(std::async(std::launch::async, [&, p] { return completion_text(s.port, p, false); }));
    streamed.push_back(std::async(std::launch::async, [&, p] { return completion_text(s.port, p, true); }));
    chats.push_back(std::async(std::launch::async, [&, p] { return chat_text(s.port, p); }));
  }
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(whole[i].get(), plain[i]) << "prompt " << i;
    EXPECT_EQ(streamed[i].get(), plain[i]) << "prompt " << i;
    EXPECT_EQ(chats[i].get(), chat[i]) << "prompt " << i;
  }
  if (drafter) {
    // The drafter did run: the spec-decode counters moved.
    const std::string metrics = http_get(s.port, "/metrics").body;
    EXPECT_EQ(metrics.find("vllm:spec_decode_num_drafts_total{model_name=\"tiny\"} 0\n"), std::string::npos);
    EXPECT_NE(metrics.find("vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"0\"}"),
              std::string::npos);
  }
}

TEST(ServerEngine, GreedyEqualsGenerateUnderLoad) { expect_greedy_equals_generate(false); }

TEST(ServerEngine, GreedyEqualsGenerateUnderLoadWithDrafter) { expect_greedy_equals_generate(true); }

// A long request whose client vanishes: aborted, its blocks back in the pool.
void expect_disconnect_aborts(bool stream) {
  TestServer s(engine_model(false, 2));
  Generator& g = *s.model->generator;
  const int64_t all_blocks = g.num_kv_blocks();
  ASSERT_TRUE(eventually([&] { return g.free_kv_blocks() == all_blocks; }));
  json body = {{"prompt", kPrompts[0]}, {"max_tokens", 1000}, {"ignore_eos", true}, {"temperature", 0},
               {"stream", stream}};
  {
    RawConnection c(s.port);
    c.send_post("/v1/completions", body.dump());
    if (stream) {
      ASSERT_TRUE(c.read_until("data: ", std::chrono::seconds(30)));  // it is generating
    }
    // Its blocks are taken while it runs.
    ASSERT_TRUE(eventually([&] { return g.free_kv_blocks() < all_blocks; }));
    c.close();
  }
  ASSERT_TRUE(eventually([&] { return s.server->active_requests() == 0; }, std::chrono::seconds(10)))
      << "the handler did not notice the client leaving";
  EXPECT_TRUE(eventually([&] { return g.free_kv_blocks() == all_blocks; }, std::chrono::seconds(10)));
  const std::string metrics = http_get(s.port, "/metrics").body;
  EXPECT_NE(metrics.find("vllm:request_success_total{model_name=\"tiny\",finished_reason=\"abort\"} 1\n"),
            std::string::npos)
      << metrics;
  // Far fewer than the 1000 tokens asked were generated.
  const size_t at = metrics.find("vllm:generation_tokens_total{model_name=\"tiny\"} ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(std::stoi(metrics.substr(at + std::string("vllm:generation_tokens_total{model_name=\"tiny\"} ").size())), 1000);
  // The server goes on serving.
  EXPECT_EQ(completion_text(s.port, kPrompts[1], false).empty(), false);
}

TEST(ServerEngine, DisconnectAbortsStreamedRequest) { expect_disconnect_aborts(true); }

TEST(ServerEngine, DisconnectAbortsWholeRequest) { expect_disconnect_aborts(false); }

TEST(ServerEngine, MetricsCountTokens) {
  TestServer s(engine_model(false, 2));
  HttpReply r = http_post(s.port, "/v1/completions",
                          json{{"prompt", kPrompts[0]}, {"max_tokens", 5}, {"ignore_eos", true}, {"n", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 10);
  const std::string metrics = http_get(s.port, "/metrics").body;
  EXPECT_NE(metrics.find("vllm:generation_tokens_total{model_name=\"tiny\"} 10\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("vllm:request_success_total{model_name=\"tiny\",finished_reason=\"length\"} 2\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("vllm:time_to_first_token_seconds_count{model_name=\"tiny\"} 2\n"), std::string::npos);
  EXPECT_NE(metrics.find("vllm:num_requests_running{model_name=\"tiny\"} 0\n"), std::string::npos);
}

// Penalties and a logit bias through the server equal `generate` with the
// same penalty flags (the drafter on both sides: lossless), and differ from
// the unpenalised answer.
TEST(ServerEngine, PenaltiesEqualGenerateWithPenaltyFlags) {
  const std::string prompt = kPrompts[0];
  std::vector<std::string> args = {"generate", "--model", shipped_model_dir(), "--device", "cpu", "--prompt", prompt,
                                   "--temperature", "0", "--max-tokens", std::to_string(kMaxTokens),
                                   "--draft-model", shipped_drafter_dir(), "--repetition-penalty", "1.3",
                                   "--frequency-penalty", "0.5", "--presence-penalty", "0.2"};
  cli::test::Ran ran = cli::test::run_flashdraft(args);
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  TestServer s(engine_model(true, 4));
  json body = {{"prompt", prompt},         {"temperature", 0},         {"max_tokens", kMaxTokens},
               {"repetition_penalty", 1.3}, {"frequency_penalty", 0.5}, {"presence_penalty", 0.2}};
  HttpReply r = http_post(s.port, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], ran.out);
  EXPECT_NE(ran.out, completion_text(s.port, prompt, false));
  // A logit bias of -100 on the first token of the unbiased answer bans it.
  body = {{"prompt", prompt}, {"temperature", 0}, {"max_tokens", 1}, {"logprobs", 0}};
  r = http_post(s.port, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string first = r.json()["choices"][0]["logprobs"]["tokens"][0];
  HttpReply tok = http_post(s.port, "/tokenize", json{{"prompt", first}});
  ASSERT_EQ(tok.json()["tokens"].size(), 1u) << tok.body;  // a token's text is that token
  const int first_id = tok.json()["tokens"][0];
  body = {{"prompt", prompt}, {"temperature", 0}, {"max_tokens", 1}, {"logprobs", 0},
          {"logit_bias", {{std::to_string(first_id), -100}}}};
  r = http_post(s.port, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.json()["choices"][0]["logprobs"]["tokens"][0], first);
}

// Completions logprobs: one entry per token, whole and streamed alike; the
// tokens spell the text; greedy picks the most likely token, so its
// log-probability is the top one; top_logprobs holds it and N alternatives.
TEST(ServerEngine, CompletionLogprobs) {
  TestServer s(engine_model(true, 4));
  json body = {{"prompt", kPrompts[1]}, {"temperature", 0}, {"max_tokens", 16}, {"ignore_eos", true}, {"logprobs", 3}};
  HttpReply r = http_post(s.port, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json whole = r.json();
  const json& choice = whole["choices"][0];
  const json& lp = choice["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 16u);
  std::string joined;
  int64_t offset = 0;
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(lp["text_offset"][i], offset);
    const std::string t = lp["tokens"][i];
    joined += t;
    offset += static_cast<int64_t>(t.size());  // ASCII code: characters are bytes
    const double chosen = lp["token_logprobs"][i];
    EXPECT_LE(chosen, 0.0);
    const json& top = lp["top_logprobs"][i];
    EXPECT_EQ(top.size(), 3u);  // greedy: the chosen token is the most likely, so no extra entry
    double best = -1e9;
    for (const auto& [k, v] : top.items()) best = std::max(best, v.get<double>());
    EXPECT_DOUBLE_EQ(chosen, best);
    EXPECT_DOUBLE_EQ(top[t].get<double>(), chosen);
  }
  EXPECT_EQ(joined, choice["text"]);
  body["stream"] = true;
  r = http_post(s.port, "/v1/completions", body);
  json streamed = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"text_offset", json::array()}};
  for (const json& e : sse_events(r.body)) {
    const json& l = e["choices"][0]["logprobs"];
    if (l.is_null()) continue;
    for (const char* key : {"tokens", "token_logprobs", "text_offset"})
      for (const json& v : l[key]) streamed[key].push_back(v);
  }
  EXPECT_EQ(streamed["tokens"], lp["tokens"]);
  EXPECT_EQ(streamed["text_offset"], lp["text_offset"]);
  // Equal up to float rounding: the two requests' steps may verify different
  // numbers of rows, and the CPU's GEMM rounds a row by how many it batches.
  ASSERT_EQ(streamed["token_logprobs"].size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(streamed["token_logprobs"][i], lp["token_logprobs"][i], 1e-4);
}

// Chat logprobs, with penalties too (log-probabilities stay those of the raw
// logits): content has one entry per completion token with N alternatives,
// most likely first; the stream says the same.
TEST(ServerEngine, ChatLogprobs) {
  TestServer s(engine_model(true, 4));
  json body = {{"messages", json::array({{{"role", "user"}, {"content", kPrompts[2]}}})},
               {"temperature", 0},
               {"max_tokens", 12},
               {"logprobs", true},
               {"top_logprobs", 4},
               {"presence_penalty", 0.5}};
  HttpReply r = http_post(s.port, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json whole = r.json();
  const json& content = whole["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), whole["usage"]["completion_tokens"].get<size_t>());
  for (const json& c : content) {
    ASSERT_EQ(c["top_logprobs"].size(), 4u);
    EXPECT_LE(c["logprob"].get<double>(), c["top_logprobs"][0]["logprob"].get<double>());
    for (size_t k = 1; k < 4; ++k) EXPECT_LE(c["top_logprobs"][k]["logprob"], c["top_logprobs"][k - 1]["logprob"]);
    std::string bytes;
    for (const json& b : c["bytes"]) bytes += static_cast<char>(b.get<int>());
    EXPECT_EQ(bytes, c["token"]);  // ASCII and chat markers: the bytes spell the token
  }
  body["stream"] = true;
  r = http_post(s.port, "/v1/chat/completions", body);
  json streamed = json::array();
  for (const json& e : sse_events(r.body)) {
    if (e["choices"].empty()) continue;
    const json& l = e["choices"][0]["logprobs"];
    if (!l.is_null())
      for (const json& c : l["content"]) streamed.push_back(c);
  }
  ASSERT_EQ(streamed.size(), content.size());
  for (size_t i = 0; i < content.size(); ++i) {
    EXPECT_EQ(streamed[i]["token"], content[i]["token"]);
    EXPECT_EQ(streamed[i]["bytes"], content[i]["bytes"]);
    EXPECT_NEAR(streamed[i]["logprob"], content[i]["logprob"], 1e-4);  // rounding, as above
    ASSERT_EQ(streamed[i]["top_logprobs"].size(), 4u);
  }
}

}  // namespace
}  // namespace flashdraft::server::test
