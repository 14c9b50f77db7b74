// Named datasets (formatted as the DFlash benchmarks do) and jsonl:PATH.
#include "bench_serve/datasets.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"

namespace flashdraft::bench_serve {
namespace {

const std::string kDir = FD_FIXTURES_DIR "/bench_serve";

std::string usage_error(const std::string& spec, const std::string& dir = kDir + "/datasets") {
  try {
    load_dataset(spec, dir);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << spec << " loaded without an error";
  return "";
}

TEST(Datasets, HumanEvalWrapsTheCodeInTheInstruction) {
  auto p = load_dataset("humaneval", kDir + "/datasets");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].text,
            "Write a solution to the following problem and make sure that it passes the tests:\n```python\n"
            "def neg(x):\n\n```");
  EXPECT_FALSE(p[0].max_tokens);
}

TEST(Datasets, Gsm8kAsksForStepsAndABoxedAnswer) {
  auto p = load_dataset("gsm8k", kDir + "/datasets");
  ASSERT_EQ(p.size(), 3u);  // the blank line is skipped
  EXPECT_EQ(p[2].text, "What is 10 - 7?\nPlease reason step by step, and put your final answer within \\boxed{}.");
}

TEST(Datasets, MtBenchSendsTheFirstTurn) {
  auto p = load_dataset("mt-bench", kDir + "/datasets");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].text, "Write a haiku about rain.");
}

TEST(Datasets, JsonlPromptTurnsAndMaxTokens) {
  auto p = load_dataset("jsonl:" + kDir + "/custom.jsonl", "");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].text, "Hello there");
  EXPECT_FALSE(p[0].max_tokens);
  EXPECT_EQ(p[1].text, "First turn");
  EXPECT_EQ(p[1].max_tokens, 7);
  EXPECT_EQ(p[2].max_tokens, 3);
}

TEST(Datasets, BadFilesNameTheFileAndLine) {
  EXPECT_NE(usage_error("jsonl:" + kDir + "/bad_prompt.jsonl").find("bad_prompt.jsonl line 2: no \"prompt\""),
            std::string::npos);
  EXPECT_NE(usage_error("jsonl:" + kDir + "/bad_json.jsonl").find("bad_json.jsonl line 2: not a JSON object"),
            std::string::npos);
  EXPECT_NE(usage_error("jsonl:" + kDir + "/bad_max_tokens.jsonl").find("line 1: max_tokens must be a positive"),
            std::string::npos);
  EXPECT_NE(usage_error("jsonl:" + kDir + "/empty.jsonl").find("holds no prompts"), std::string::npos);
  EXPECT_NE(usage_error("jsonl:" + kDir + "/missing.jsonl").find("missing.jsonl is not a file"), std::string::npos);
  EXPECT_NE(usage_error("jsonl:" + kDir).find("is not a file"), std::string::npos);
  EXPECT_NE(usage_error("jsonl:").find("needs a path"), std::string::npos);
}

TEST(Datasets, UnknownNameAndMissingDirectory) {
  EXPECT_NE(usage_error("sharegpt").find("expected humaneval, gsm8k, mt-bench or jsonl:PATH"), std::string::npos);
  const std::string missing = usage_error("humaneval", kDir + "/nowhere");
  EXPECT_NE(missing.find("humaneval.jsonl not found in " + kDir + "/nowhere"), std::string::npos) << missing;
  EXPECT_NE(missing.find("--dataset-dir"), std::string::npos);
}

TEST(Datasets, TakePromptsGoesRoundAgain) {
  const std::vector<BenchPrompt> all = {{"a", std::nullopt}, {"b", 4}};
  auto p = take_prompts(all, 5);
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].text, "a");
  EXPECT_EQ(p[3].text, "b");
  EXPECT_EQ(p[3].max_tokens, 4);
  EXPECT_EQ(p[4].text, "a");
  EXPECT_EQ(take_prompts(all, 1).size(), 1u);
}

// The real sets beside the repository, when this checkout has them.
TEST(Datasets, SharedDatasetsWhenPresent) {
  std::string dir;
  for (const std::string& d : default_dataset_dirs())
    if (std::filesystem::exists(d + "/humaneval.jsonl")) dir = d;
  if (dir.empty()) GTEST_SKIP() << "no ../shared/datasets here";
  EXPECT_EQ(load_dataset("humaneval", dir).size(), 164u);
  EXPECT_EQ(load_dataset("gsm8k", dir).size(), 1319u);
  EXPECT_EQ(load_dataset("mt-bench", dir).size(), 80u);
  EXPECT_EQ(load_dataset("humaneval", "").size(), 164u);  // found without --dataset-dir
}

}  // namespace
}  // namespace flashdraft::bench_serve
