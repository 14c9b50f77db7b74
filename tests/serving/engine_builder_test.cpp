#include "serving/engine_builder.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/error.h"

namespace flashdraft::serving {
namespace {

const std::string kTiny = FD_TINY_MODEL_DIR;              // 1024 positions, eos 509 and 507
const std::string kShipped = FD_SOURCE_DIR "/models";  // target + DFlash drafters (block_size 16)

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
  return s;
}

TEST(ReadModelFiles, GivesDefaultsEosIdsAndTheParsedChatTemplate) {
  ModelFiles m = read_model_files(kTiny);
  EXPECT_TRUE(m.dir.is_absolute());
  EXPECT_EQ(m.config.max_position_embeddings, 1024);
  EXPECT_DOUBLE_EQ(m.defaults.temperature, 0.6);
  EXPECT_EQ(m.defaults.top_k, 20);
  EXPECT_EQ(m.eos, (std::vector<int32_t>{509, 507}));
  EXPECT_TRUE(m.chat_template.has_value());
  EXPECT_EQ(m.chat_template_error, "");
}

TEST(ReadModelFiles, AMissingDirectoryIsAUsageErrorNamingTheFlag) {
  try {
    read_model_files(kTiny + "/nope");
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--model DIR: no such directory", 0), 0u) << e.what();
  }
}

TEST(BuildEngine, ServerSizingGivesEverySequenceTheWholeContext) {
  EngineOptions o;
  o.model = kTiny;
  o.device = "cpu";
  o.max_num_seqs = 3;
  LoadedEngine e = build_engine(o, nullptr);
  EXPECT_EQ(e.max_model_len, 1024);
  EXPECT_EQ(e.engine->context_limit(), 1024);
  EXPECT_EQ(e.engine->num_kv_blocks(), 3 * ((1024 + 1 + 15) / 16));
  EXPECT_EQ(e.drafter, nullptr);
}

TEST(BuildEngine, MaxModelLenLimitsTheContextAndThePool) {
  EngineOptions o;
  o.model = kTiny;
  o.device = "cpu";
  o.max_num_seqs = 2;
  o.max_model_len = 64;
  std::FILE* log = std::tmpfile();
  LoadedEngine e = build_engine(o, log);
  EXPECT_EQ(e.max_model_len, 64);
  EXPECT_EQ(e.engine->num_kv_blocks(), 2 * ((64 + 1 + 15) / 16));
  EXPECT_EQ(read_all(log).rfind("flashdraft: loaded ", 0), 0u);
  std::fclose(log);

  // A prompt that fills max_model_len has no room left.
  engine::SamplingParams p;
  EXPECT_THROW(e.engine->add(std::vector<int32_t>(64, 5), p), Error);
  p.temperature = 0;
  p.max_tokens = 100;
  const engine::RequestId id = e.engine->add(std::vector<int32_t>(60, 5), p);
  while (e.engine->has_work()) e.engine->step();
  EXPECT_EQ(e.engine->result(id).tokens.size(), 4u);
  EXPECT_EQ(e.engine->result(id).stop, engine::StopReason::kContextFull);
}

TEST(BuildEngine, TheCliSizesThePoolForItsPrompts) {
  EngineOptions o;
  o.model = kTiny;
  o.device = "cpu";
  o.max_num_seqs = 4;
  o.positions_per_seq = 40;
  LoadedEngine e = build_engine(o, nullptr);
  EXPECT_EQ(e.engine->context_limit(), 1024);
  EXPECT_EQ(e.engine->num_kv_blocks(), 4 * ((40 + 1 + 15) / 16));
}

void expect_usage_error(const EngineOptions& o, const std::string& needle) {
  try {
    build_engine(o, nullptr);
    ADD_FAILURE() << "expected a usage error with " << needle;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(BuildEngine, LimitsOutOfRangeAreUsageErrorsNamingTheFlag) {
  EngineOptions o;
  o.model = kTiny;
  o.device = "cpu";
  o.max_model_len = 1025;
  expect_usage_error(o, "--max-model-len: must be in [1, 1024]");
  o.max_model_len = 0;
  o.max_num_seqs = 0;
  expect_usage_error(o, "--max-num-seqs");
  o.max_num_seqs = 1;
  o.max_num_batched_tokens = 0;
  expect_usage_error(o, "--max-num-batched-tokens");
  o.max_num_batched_tokens = 512;
  o.load_format = "pt";
  expect_usage_error(o, "--load-format");
}

TEST(BuildEngine, WithADrafterTheKvPoolAndStepLimitsCoverADraftBlock) {
  EngineOptions o;
  o.model = kShipped + "/target";
  o.device = "cpu";
  o.speculative = speculative_setup(kShipped + "/drafter-full", std::nullopt, std::nullopt);
  o.max_num_seqs = 2;
  o.positions_per_seq = 100;
  LoadedEngine e = build_engine(o, nullptr);
  ASSERT_NE(e.drafter, nullptr);
  const int64_t block = e.drafter->config().block_size;
  EXPECT_EQ(e.engine->num_speculative_tokens(), block - 1);
  EXPECT_EQ(e.engine->num_kv_blocks(), 2 * ((100 + block + 15) / 16));

  // A verify step runs 1 + k rows: a smaller forward cannot hold it.
  o.max_num_batched_tokens = block - 1;
  expect_usage_error(o, "--max-num-batched-tokens: must be >= " + std::to_string(block));
  o.max_num_batched_tokens = 512;
  o.speculative.num_speculative_tokens = static_cast<int>(block);
  expect_usage_error(o, "has block_size");
}

}  // namespace
}  // namespace flashdraft::serving
