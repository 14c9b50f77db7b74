// Prometheus text and the spec-decode counters read from it.
#include "bench_serve/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>

namespace flashdraft::bench_serve {
namespace {

std::string scrape(double drafts, double draft_tokens, double accepted, std::vector<double> per_pos) {
  std::string s =
      "# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.\n"
      "# TYPE vllm:spec_decode_num_drafts counter\n";
  s += "vllm:spec_decode_num_drafts_total{model_name=\"m\"} " + std::to_string(drafts) + "\n";
  s += "vllm:spec_decode_num_draft_tokens_total{model_name=\"m\"} " + std::to_string(draft_tokens) + "\n";
  s += "vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} " + std::to_string(accepted) + "\n";
  for (size_t i = 0; i < per_pos.size(); ++i)
    s += "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"m\",position=\"" + std::to_string(i) +
         "\"} " + std::to_string(per_pos[i]) + "\n";
  s += "vllm:num_requests_running{model_name=\"m\"} 3\n";
  return s;
}

TEST(Prometheus, ParsesNamesLabelsValuesAndSkipsTheRest) {
  const auto samples = parse_prometheus_text(
      "# HELP x help text\n"
      "a_total 3\n"
      "b{l=\"q\\\"uo,te\",k=\"v\"} 1.5e3 1700000000000\r\n"
      "c{} +Inf\n"
      "broken{l=\"unterminated} 1\n"
      "no_value\n"
      "d{l=\"x\"} notanumber\n"
      "  e 2\n");
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0].name, "a_total");
  EXPECT_EQ(samples[0].value, 3);
  EXPECT_EQ(samples[1].name, "b");
  EXPECT_EQ(samples[1].labels.at("l"), "q\"uo,te");
  EXPECT_EQ(samples[1].labels.at("k"), "v");
  EXPECT_EQ(samples[1].value, 1500);
  EXPECT_TRUE(std::isinf(samples[2].value));
  EXPECT_EQ(samples[3].name, "e");
}

TEST(Prometheus, SpecCountersSumOverLabelsWithOrWithoutTotal) {
  const auto c = spec_decode_counters(parse_prometheus_text(
      "vllm:spec_decode_num_drafts_total{engine=\"0\"} 10\n"
      "vllm:spec_decode_num_drafts_total{engine=\"1\"} 5\n"
      "vllm:spec_decode_num_draft_tokens{engine=\"0\"} 45\n"
      "vllm:spec_decode_num_accepted_tokens_total 20\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"1\"} 4\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"1\",position=\"1\"} 2\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"zero\"} 99\n"
      "vllm:spec_decode_num_drafts_created 1000\n"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->drafts, 15);
  EXPECT_EQ(c->draft_tokens, 45);
  EXPECT_EQ(c->accepted_tokens, 20);
  ASSERT_EQ(c->accepted_per_pos.size(), 1u);
  EXPECT_EQ(c->accepted_per_pos.at(1), 6);
}

TEST(Prometheus, NoSpecCounters) {
  EXPECT_FALSE(spec_decode_counters(parse_prometheus_text("vllm:num_requests_running 1\n")));
}

TEST(Prometheus, DeltaGivesRateLengthAndPerPosition) {
  const auto before = spec_decode_counters(parse_prometheus_text(scrape(10, 30, 12, {8, 3, 1})));
  const auto after = spec_decode_counters(parse_prometheus_text(scrape(30, 90, 42, {26, 12, 4})));
  ASSERT_TRUE(before && after);
  const auto d = spec_decode_delta(*before, *after);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->drafts, 20);
  EXPECT_EQ(d->draft_tokens, 60);
  EXPECT_EQ(d->accepted_tokens, 30);
  EXPECT_DOUBLE_EQ(d->acceptance_rate, 0.5);
  EXPECT_DOUBLE_EQ(d->acceptance_length, 2.5);
  ASSERT_EQ(d->per_position_rate.size(), 3u);
  EXPECT_DOUBLE_EQ(d->per_position_rate[0], 18.0 / 20);
  EXPECT_DOUBLE_EQ(d->per_position_rate[1], 9.0 / 20);
  EXPECT_DOUBLE_EQ(d->per_position_rate[2], 3.0 / 20);
}

TEST(Prometheus, NoDraftsInBetween) {
  const auto c = spec_decode_counters(parse_prometheus_text(scrape(10, 30, 12, {})));
  ASSERT_TRUE(c);
  EXPECT_FALSE(spec_decode_delta(*c, *c));
}

}  // namespace
}  // namespace flashdraft::bench_serve
