#include "io/generation_config.h"

#include <gtest/gtest.h>

#include "expect_error.h"
#include "safetensors_writer.h"

namespace flashdraft::io {
namespace {

using testing::expect_error;

TEST(GenerationConfig, Qwen3Defaults) {
  // Qwen3-0.6B's generation_config.json as published.
  const GenerationConfig g = parse_generation_config(R"({
    "bos_token_id": 151643,
    "do_sample": true,
    "eos_token_id": [151645, 151643],
    "pad_token_id": 151643,
    "temperature": 0.6,
    "top_k": 20,
    "top_p": 0.95,
    "transformers_version": "4.51.0"
  })", "gen.json");
  EXPECT_EQ(g.bos_token_id, 151643);
  EXPECT_EQ(g.pad_token_id, 151643);
  EXPECT_EQ(g.do_sample, true);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_DOUBLE_EQ(*g.temperature, 0.6);
  EXPECT_EQ(g.top_k, 20);
  EXPECT_DOUBLE_EQ(*g.top_p, 0.95);
  EXPECT_FALSE(g.min_p.has_value());
  EXPECT_FALSE(g.repetition_penalty.has_value());
  EXPECT_FALSE(g.max_new_tokens.has_value());
}

TEST(GenerationConfig, ScalarEosAndNulls) {
  const GenerationConfig g = parse_generation_config(
      R"({"eos_token_id": 2, "temperature": null, "min_p": 0.05, "max_new_tokens": 512,
          "repetition_penalty": 1.1})",
      "gen.json");
  EXPECT_EQ(g.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_FALSE(g.temperature.has_value());
  EXPECT_DOUBLE_EQ(*g.min_p, 0.05);
  EXPECT_EQ(g.max_new_tokens, 512);
  EXPECT_DOUBLE_EQ(*g.repetition_penalty, 1.1);
}

TEST(GenerationConfig, MissingFileMeansNoDefaults) {
  testing::TempDir dir;
  const GenerationConfig g = load_generation_config(dir.path());
  EXPECT_FALSE(g.temperature.has_value());
  EXPECT_FALSE(g.top_k.has_value());
  EXPECT_FALSE(g.do_sample.has_value());
  EXPECT_TRUE(g.eos_token_ids.empty());
}

TEST(GenerationConfig, LoadsFromDirectory) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "generation_config.json", R"({"top_k": 7})");
  EXPECT_EQ(load_generation_config(dir.path()).top_k, 7);
}

TEST(GenerationConfig, MalformedFileIsAnError) {
  testing::TempDir dir;
  const auto path = dir.path() / "generation_config.json";
  testing::write_file(path, "{\"top_k\": ");
  expect_error([&] { load_generation_config(dir.path()); }, {path.string(), "invalid JSON"});
  testing::write_file(path, R"({"top_k": "20"})");
  expect_error([&] { load_generation_config(dir.path()); },
               {path.string(), "\"top_k\"", "expected an integer"});
  testing::write_file(path, R"({"do_sample": "yes"})");
  expect_error([&] { load_generation_config(dir.path()); }, {"\"do_sample\"", "true or false"});
}

}  // namespace
}  // namespace flashdraft::io
