// Prometheus text with vLLM's names.
#include <gtest/gtest.h>

#include <sstream>

#include "server/metrics.h"

namespace flashdraft::server {
namespace {

// The value of the sample line that starts with `prefix` (exactly one must).
double sample(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  std::optional<double> value;
  while (std::getline(in, line)) {
    if (line.rfind(prefix + " ", 0) == 0) {
      EXPECT_FALSE(value) << "two lines for " << prefix;
      value = std::stod(line.substr(prefix.size() + 1));
    }
  }
  EXPECT_TRUE(value) << "no line for " << prefix << " in\n" << text;
  return value.value_or(-1);
}

TEST(Metrics, CountersGaugesAndSpecDecode) {
  Metrics m("tiny");
  for (int i = 0; i < 5; ++i) m.request_submitted();
  m.request_started();
  m.request_started();
  m.request_started();  // 3 running, 2 waiting
  m.add_prompt_tokens(10);
  m.add_generation_tokens(4);
  m.add_generation_tokens(3);
  FinishedRequest r;
  r.ttft_seconds = 0.03;
  r.e2e_seconds = 0.63;
  r.generation_tokens = 7;
  r.finish_reason = "stop";
  r.spec.record(4, 2);
  r.spec.record(4, 0);
  for (int64_t k : {4, 4, 0, 2}) r.spec.record_length(k);
  m.record(r, true);
  r.finish_reason = "abort";
  r.spec = {};
  m.record(r, false);
  const std::string text = m.render(0.25);
  const std::string l = "{model_name=\"tiny\"}";
  EXPECT_EQ(sample(text, "vllm:num_requests_running" + l), 2);
  EXPECT_EQ(sample(text, "vllm:num_requests_waiting" + l), 1);
  EXPECT_EQ(sample(text, "vllm:kv_cache_usage_perc" + l), 0.25);
  EXPECT_EQ(sample(text, "vllm:prompt_tokens_total" + l), 10);
  EXPECT_EQ(sample(text, "vllm:generation_tokens_total" + l), 7);
  EXPECT_EQ(sample(text, "vllm:request_success_total{model_name=\"tiny\",finished_reason=\"stop\"}"), 1);
  EXPECT_EQ(sample(text, "vllm:request_success_total{model_name=\"tiny\",finished_reason=\"abort\"}"), 1);
  EXPECT_EQ(sample(text, "vllm:spec_decode_num_drafts_total" + l), 2);
  EXPECT_EQ(sample(text, "vllm:spec_decode_num_draft_tokens_total" + l), 8);
  EXPECT_EQ(sample(text, "vllm:spec_decode_num_accepted_tokens_total" + l), 2);
  EXPECT_EQ(sample(text, "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"0\"}"), 1);
  EXPECT_EQ(sample(text, "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"1\"}"), 1);
  EXPECT_NE(text.find("# TYPE vllm:time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("# TYPE vllm:spec_decode_num_drafts counter"), std::string::npos);
  // Draft lengths 4, 4, 0, 2: cumulative buckets, sum 10, count 4.
  const std::string len = "flashdraft:spec_decode_draft_length";
  EXPECT_EQ(sample(text, len + "_bucket{model_name=\"tiny\",le=\"0\"}"), 1);
  EXPECT_EQ(sample(text, len + "_bucket{model_name=\"tiny\",le=\"1\"}"), 1);
  EXPECT_EQ(sample(text, len + "_bucket{model_name=\"tiny\",le=\"3\"}"), 2);
  EXPECT_EQ(sample(text, len + "_bucket{model_name=\"tiny\",le=\"15\"}"), 4);
  EXPECT_EQ(sample(text, len + "_bucket{model_name=\"tiny\",le=\"+Inf\"}"), 4);
  EXPECT_EQ(sample(text, len + "_sum" + l), 10);
  EXPECT_EQ(sample(text, len + "_count" + l), 4);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Metrics m("x");
  m.request_submitted();
  m.request_submitted();
  FinishedRequest r;
  r.generation_tokens = 3;
  r.ttft_seconds = 0.03;  // in le=0.04
  r.e2e_seconds = 0.23;   // tpot (0.23 - 0.03) / 2 = 0.1
  m.record(r, false);
  r.ttft_seconds = 3;  // in le=5
  r.e2e_seconds = 3.5;
  m.record(r, false);
  const std::string text = m.render(0);
  const std::string ttft = "vllm:time_to_first_token_seconds";
  EXPECT_EQ(sample(text, ttft + "_bucket{model_name=\"x\",le=\"0.02\"}"), 0);
  EXPECT_EQ(sample(text, ttft + "_bucket{model_name=\"x\",le=\"0.04\"}"), 1);
  EXPECT_EQ(sample(text, ttft + "_bucket{model_name=\"x\",le=\"5\"}"), 2);
  EXPECT_EQ(sample(text, ttft + "_bucket{model_name=\"x\",le=\"+Inf\"}"), 2);
  EXPECT_EQ(sample(text, ttft + "_count{model_name=\"x\"}"), 2);
  EXPECT_DOUBLE_EQ(sample(text, ttft + "_sum{model_name=\"x\"}"), 3.03);
  EXPECT_EQ(sample(text, "vllm:time_per_output_token_seconds_bucket{model_name=\"x\",le=\"0.1\"}"), 1);
  EXPECT_EQ(sample(text, "vllm:e2e_request_latency_seconds_count{model_name=\"x\"}"), 2);
}

TEST(Metrics, LabelValuesAreEscaped) {
  Metrics m("a\"b\\c");
  EXPECT_NE(m.render(0).find("model_name=\"a\\\"b\\\\c\""), std::string::npos);
}

}  // namespace
}  // namespace flashdraft::server
