// bench serve end to end against the fake server: counts, latencies that
// reflect the scripted delays, concurrency limits, acceptance from /metrics,
// and every kind of failure reported, not thrown.
#include "bench_serve/load_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "bench_serve/arrivals.h"
#include "bench_serve/run_report.h"
#include "bench_serve/server_probe.h"
#include "core/error.h"
#include "fake_openai_server.h"

namespace flashdraft::bench_serve {
namespace {

using test::FakeOpenAiServer;
using test::FakeScript;

BenchConfig config_for(const FakeOpenAiServer& server, size_t prompts) {
  BenchConfig c;
  c.client.server = parse_base_url(server.base_url());
  c.client.timeout = 30;
  c.model = "fake-model";
  c.dataset = "test";
  for (size_t i = 0; i < prompts; ++i) c.prompts.push_back({"prompt " + std::to_string(i), std::nullopt});
  c.max_tokens = 12;
  return c;
}

TEST(LoadRunner, MeasuresTheScriptedStream) {
  FakeScript script;  // 4 chunks of 3 tokens; 40 ms to the first, 20 ms apart
  FakeOpenAiServer server(script);
  BenchConfig c = config_for(server, 6);
  c.max_concurrency = 2;
  size_t progress_calls = 0, last_done = 0;
  const BenchRun run = run_benchmark(c, [&](size_t done, size_t failed, double) {
    ++progress_calls;
    EXPECT_GE(done, last_done);
    EXPECT_EQ(failed, 0u);
    last_done = done;
  });
  EXPECT_GE(progress_calls, 1u);
  EXPECT_EQ(last_done, 6u);
  EXPECT_EQ(server.max_in_flight(), 2);

  const RunSummary s = summarize_run(run);
  EXPECT_EQ(s.completed, 6u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.output_tokens, 6 * 12);
  EXPECT_EQ(s.input_tokens, 6 * 7);
  EXPECT_EQ(s.without_usage, 0u);
  ASSERT_TRUE(s.ttft && s.itl && s.tpot && s.e2e);
  // Lower bounds are the scripted sleeps; upper bounds only catch nonsense.
  EXPECT_GE(s.ttft->median, 0.040);
  EXPECT_LT(s.ttft->median, 1.0);
  EXPECT_EQ(s.itl->count, 6u * 3);
  EXPECT_GE(s.itl->median, 0.020 * 0.9);
  EXPECT_LT(s.itl->median, 0.5);
  // TPOT spreads three 20 ms gaps over 11 tokens.
  EXPECT_GE(s.tpot->median, 0.060 / 11 * 0.9);
  EXPECT_LT(s.tpot->median, s.itl->median);
  EXPECT_GE(s.e2e->median, 0.100);
  EXPECT_DOUBLE_EQ(s.tokens_per_chunk, 3.0);
  // Two at a time, six requests of >= 100 ms each: at least 300 ms.
  EXPECT_GE(run.duration, 0.300);

  ASSERT_TRUE(run.spec) << run.spec_note;
  EXPECT_EQ(run.spec->drafts, 6 * 4);
  EXPECT_DOUBLE_EQ(run.spec->acceptance_length, 3.0);  // = tokens per chunk, as scripted
  EXPECT_DOUBLE_EQ(run.spec->acceptance_rate, 2.0 / 15);
  ASSERT_EQ(run.spec->per_position_rate.size(), 1u);
  EXPECT_DOUBLE_EQ(run.spec->per_position_rate[0], 1.0);
}

TEST(LoadRunner, RequestBodies) {
  FakeOpenAiServer server(FakeScript{});
  BenchConfig c = config_for(server, 2);
  c.prompts[1].max_tokens = 5;
  c.ignore_eos = true;
  c.extra_body = {{"top_k", 1}};
  ASSERT_EQ(summarize_run(run_benchmark(c, nullptr)).completed, 2u);
  c.endpoint = Endpoint::chat;
  c.ignore_eos = false;
  c.extra_body = nullptr;
  c.prompts.resize(1);
  ASSERT_EQ(summarize_run(run_benchmark(c, nullptr)).completed, 1u);

  std::vector<nlohmann::json> bodies;
  for (const std::string& b : server.bodies()) bodies.push_back(nlohmann::json::parse(b));
  ASSERT_EQ(bodies.size(), 3u);
  std::sort(bodies.begin(), bodies.begin() + 2, [](const auto& a, const auto& b) { return a["prompt"] < b["prompt"]; });
  for (const auto& b : bodies) {
    EXPECT_EQ(b["model"], "fake-model");
    EXPECT_EQ(b["stream"], true);
    EXPECT_EQ(b["stream_options"]["include_usage"], true);
    EXPECT_EQ(b["temperature"], 0.0);
  }
  EXPECT_EQ(bodies[0]["prompt"], "prompt 0");
  EXPECT_EQ(bodies[0]["max_tokens"], 12);
  EXPECT_EQ(bodies[1]["max_tokens"], 5);
  EXPECT_EQ(bodies[0]["ignore_eos"], true);
  EXPECT_EQ(bodies[0]["top_k"], 1);
  EXPECT_FALSE(bodies[2].contains("prompt"));
  EXPECT_FALSE(bodies[2].contains("ignore_eos"));
  EXPECT_EQ(bodies[2]["messages"], nlohmann::json::parse(R"([{"role":"user","content":"prompt 0"}])"));
}

TEST(LoadRunner, FailuresAreCountedNotThrown) {
  FakeOpenAiServer server(FakeScript{});
  BenchConfig c = config_for(server, 4);
  c.prompts[1].text = "FAIL";
  c.prompts[2].text = "STREAM_ERROR";
  const BenchRun run = run_benchmark(c, nullptr);
  const RunSummary s = summarize_run(run);
  EXPECT_EQ(s.completed, 2u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(run.results[1].error, "HTTP 500: scripted failure");
  EXPECT_EQ(run.results[2].error, "error in the stream: scripted stream error");

  c.model = "other";
  const RunSummary wrong_model = summarize_run(run_benchmark(c, nullptr));
  EXPECT_EQ(wrong_model.failed, 4u);
  ASSERT_FALSE(wrong_model.errors.empty());
  EXPECT_EQ(wrong_model.errors[0].first, "HTTP 404: no model other");
}

TEST(LoadRunner, UsageMissingFallsBackToChunks) {
  FakeScript script;
  script.send_usage = false;
  FakeOpenAiServer server(script);
  const RunSummary s = summarize_run(run_benchmark(config_for(server, 2), nullptr));
  EXPECT_EQ(s.completed, 2u);
  EXPECT_EQ(s.without_usage, 2u);
  EXPECT_EQ(s.output_tokens, 2 * 4);  // chunks, not tokens
}

TEST(LoadRunner, PoissonArrivalsSpreadTheRequests) {
  FakeScript script;
  script.first_delay = std::chrono::milliseconds(1);
  script.gap = std::chrono::milliseconds(1);
  FakeOpenAiServer server(script);
  BenchConfig c = config_for(server, 8);
  c.request_rate = 20;  // 50 ms apart on average: the last one near 350 ms
  c.seed = 3;
  const BenchRun run = run_benchmark(c, nullptr);
  const std::vector<double> planned = arrival_times(8, 20, 3);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_GE(run.results[i].sent_at, planned[i]) << i;
    EXPECT_LT(run.results[i].sent_at, planned[i] + 0.25) << i;
  }
}

TEST(ServerProbe, ModelKeyAndUnreachable) {
  FakeScript script;
  script.api_key = "sesame";
  FakeOpenAiServer server(script);
  ClientOptions o;
  o.server = parse_base_url(server.base_url());
  try {
    probe_server(o, "");
    ADD_FAILURE() << "a missing key passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refused the API key (HTTP 401: bad key)"), std::string::npos) << e.what();
  }
  o.api_key = "sesame";
  EXPECT_EQ(probe_server(o, ""), "fake-model");
  EXPECT_EQ(probe_server(o, "given"), "given");

  ClientOptions nowhere;
  nowhere.server = parse_base_url("http://127.0.0.1:1");
  try {
    probe_server(nowhere, "");
    ADD_FAILURE() << "an unreachable server passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot connect to http://127.0.0.1:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is the server running?"), std::string::npos) << e.what();
  }
  const RequestResult r = stream_request(nowhere, "/v1/completions", "{}");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("cannot connect"), std::string::npos) << r.error;
  const SpecScrape scrape = scrape_spec_counters(nowhere);
  EXPECT_FALSE(scrape.counters);
  EXPECT_NE(scrape.note.find("GET /metrics failed"), std::string::npos);
}

}  // namespace
}  // namespace flashdraft::bench_serve
