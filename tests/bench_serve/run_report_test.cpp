// The figures of a run from hand-made request results.
#include "bench_serve/run_report.h"

#include <gtest/gtest.h>

namespace flashdraft::bench_serve {
namespace {

RequestResult ok(double ttft, double e2e, int64_t prompt, int64_t out, std::vector<double> itl, bool usage = true) {
  RequestResult r;
  r.ok = true;
  r.ttft = ttft;
  r.e2e = e2e;
  r.prompt_tokens = prompt;
  r.output_tokens = out;
  r.content_chunks = static_cast<int64_t>(itl.size()) + 1;
  r.itl = std::move(itl);
  r.usage_reported = usage;
  return r;
}

RequestResult failed(const std::string& error) {
  RequestResult r;
  r.error = error;
  return r;
}

BenchRun sample_run() {
  BenchRun run;
  run.duration = 2.0;
  run.results = {ok(0.1, 1.1, 10, 11, {0.2, 0.3, 0.5}),  // tpot 1.0 / 10 = 0.1
                 ok(0.3, 0.7, 20, 5, {0.4}),             // tpot 0.4 / 4 = 0.1
                 ok(0.2, 0.2, 30, 1, {}),                // one token: no tpot
                 failed("HTTP 503: busy"), failed("HTTP 503: busy"), failed("cannot connect")};
  return run;
}

TEST(RunReport, Summary) {
  const RunSummary s = summarize_run(sample_run());
  EXPECT_EQ(s.completed, 3u);
  EXPECT_EQ(s.failed, 3u);
  EXPECT_EQ(s.input_tokens, 60);
  EXPECT_EQ(s.output_tokens, 17);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(s.output_throughput, 8.5);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 38.5);
  ASSERT_TRUE(s.ttft && s.tpot && s.itl && s.e2e);
  EXPECT_NEAR(s.ttft->mean, 0.2, 1e-12);
  EXPECT_EQ(s.tpot->count, 2u);
  EXPECT_NEAR(s.tpot->mean, 0.1, 1e-12);
  EXPECT_EQ(s.itl->count, 4u);  // every gap of every request, pooled
  EXPECT_NEAR(s.itl->median, 0.35, 1e-12);
  EXPECT_NEAR(s.e2e->median, 0.7, 1e-12);
  EXPECT_NEAR(s.tokens_per_chunk, 17.0 / 7, 1e-12);  // 4 + 2 + 1 chunks
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0], (std::pair<std::string, size_t>{"HTTP 503: busy", 2}));
  EXPECT_EQ(s.errors[1], (std::pair<std::string, size_t>{"cannot connect", 1}));
}

TEST(RunReport, TableAndJson) {
  BenchRun run = sample_run();
  SpecDecodeSummary spec;
  spec.drafts = 20;
  spec.draft_tokens = 60;
  spec.accepted_tokens = 30;
  spec.acceptance_rate = 0.5;
  spec.acceptance_length = 2.5;
  spec.per_position_rate = {0.9, 0.45, 0.15};
  run.spec = spec;
  BenchConfig c;
  c.client.server = parse_base_url("http://127.0.0.1:8000");
  c.model = "m";
  c.dataset = "humaneval";
  c.prompts.resize(6);
  c.max_concurrency = 4;
  const RunSummary s = summarize_run(run);

  const std::string table = format_report(c, run, s);
  for (const char* want : {"Successful requests             3", "Failed requests                 3",
                           "Request throughput (req/s)      1.50", "Acceptance rate                 50.0 %",
                           "Acceptance length               2.50", "0.90 0.45 0.15", "    2 x HTTP 503: busy",
                           "TTFT                                200.00    200.00"})
    EXPECT_NE(table.find(want), std::string::npos) << want << " not in\n" << table;

  const auto j = report_json(c, run, s);
  EXPECT_EQ(j["completed"], 3);
  EXPECT_EQ(j["failed"], 3);
  EXPECT_EQ(j["max_concurrency"], 4);
  EXPECT_EQ(j["request_rate"], "inf");
  EXPECT_DOUBLE_EQ(j["mean_ttft_ms"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(j["mean_tpot_ms"].get<double>(), 100);
  EXPECT_EQ(j["spec_decode"]["num_drafts"], 20);
  EXPECT_TRUE(j["spec_decode"]["num_drafts"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["spec_decode"]["acceptance_length"].get<double>(), 2.5);
  ASSERT_EQ(j["requests"].size(), 6u);
  EXPECT_EQ(j["requests"][3]["error"], "HTTP 503: busy");
  EXPECT_EQ(j["requests"][0]["itl_ms"].size(), 3u);
  EXPECT_EQ(j["errors"][0]["count"], 2);
}

TEST(RunReport, NothingCompleted) {
  BenchRun run;
  run.duration = 1;
  run.results = {failed("x")};
  run.spec_note = "GET /metrics: HTTP 404";
  const RunSummary s = summarize_run(run);
  EXPECT_FALSE(s.ttft);
  BenchConfig c;
  c.client.server = parse_base_url("http://h:1");
  const std::string table = format_report(c, run, s);
  EXPECT_NE(table.find("n/a"), std::string::npos);
  EXPECT_NE(table.find("GET /metrics: HTTP 404"), std::string::npos);
  const auto j = report_json(c, run, s);
  EXPECT_TRUE(j["mean_ttft_ms"].is_null());
  EXPECT_TRUE(j["spec_decode"].is_null());
}

}  // namespace
}  // namespace flashdraft::bench_serve
