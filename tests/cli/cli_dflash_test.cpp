// `flashdraft generate` with the shipped DFlash pair (models/): the drafter
// changes speed, never text; both spellings of the drafter flags; the summary
// reports tau; batch mode over a jsonl file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "subprocess.h"
#include "tiny_model_dir.h"

namespace flashdraft::cli::test {
namespace {

const std::string kModels = FD_SOURCE_DIR "/models";
const std::string kTarget = kModels + "/target", kFull = kModels + "/drafter-full", kSwa = kModels + "/drafter-swa";
const std::string kPrompt = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n";

Ran generate(std::vector<std::string> extra) {
  std::vector<std::string> args = {"generate", "--model", kTarget};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_flashdraft(args);
}

TEST(CliDFlash, GreedyTextIsTheSameWithAndWithoutADrafter) {
  Ran plain = generate({"--prompt", kPrompt, "--temperature", "0", "--max-tokens", "96"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_FALSE(plain.out.empty());
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--draft-model", kFull},
           {"--draft-model", kSwa, "--num-speculative-tokens", "5"},
           {"--speculative-config", R"({"method":"dflash","model":")" + kFull + R"(","num_speculative_tokens":15})"}}) {
    std::vector<std::string> args = {"--prompt", kPrompt, "--temperature", "0", "--max-tokens", "96"};
    args.insert(args.end(), flags.begin(), flags.end());
    Ran r = generate(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plain.out) << flags[1];
    const std::string summary = r.err_lines().back();
    EXPECT_NE(summary.find("96 generated tokens"), std::string::npos) << summary;
    EXPECT_NE(summary.find("dflash tau "), std::string::npos) << summary;
    EXPECT_NE(summary.find("acceptance by position"), std::string::npos) << summary;
    // Two load lines (target, drafter), adaptive speculation's calibration line and the summary.
    EXPECT_EQ(r.err_lines().size(), 4u) << r.err;
  }
  EXPECT_EQ(plain.err.find("tau"), std::string::npos) << plain.err;
}

int generated_tokens(const Ran& r) {
  const std::string line = r.err_lines().back();
  const auto at = line.find(" generated tokens");
  if (at == std::string::npos) return -1;
  const auto start = line.rfind(' ', at - 1) + 1;
  return std::stoi(line.substr(start, at - start));
}

TEST(CliDFlash, StopStringInsideAnAcceptedRunTruncatesThere) {
  Ran plain = generate({"--prompt", kPrompt, "--temperature", "0", "--max-tokens", "96"});
  ASSERT_EQ(plain.exit_code, 0);
  ASSERT_GT(plain.out.size(), 40u);
  const std::string stop = plain.out.substr(30, 4);  // somewhere in the middle of the text
  Ran p = generate({"--prompt", kPrompt, "--temperature", "0", "--max-tokens", "96", "--stop", stop});
  Ran d = generate(
      {"--prompt", kPrompt, "--temperature", "0", "--max-tokens", "96", "--stop", stop, "--draft-model", kFull});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, p.out);
  EXPECT_EQ(d.out, plain.out.substr(0, plain.out.find(stop)));
  EXPECT_NE(d.err_lines().back().find("stop: stop_string"), std::string::npos) << d.err;
  EXPECT_EQ(generated_tokens(d), generated_tokens(p));
  EXPECT_GT(generated_tokens(d), 0);
}

TEST(CliDFlash, BadDrafterFlagsAreOneLineUsageErrors) {
  struct Case {
    std::vector<std::string> flags;
    std::string needle;
    bool before_loading = true;  // caught before any weights load: the error is the only line
  };
  const std::vector<Case> cases = {
      {{"--speculative-config", "{\"method\":"}, "not valid JSON"},
      {{"--speculative-config", R"({"method":"medusa","model":"x"})"}, "unknown method"},
      {{"--speculative-config", R"({"method":"dflash","model":"/nonexistent/drafter"})"}, "no such directory"},
      {{"--num-speculative-tokens", "4"}, "needs --draft-model"},
      {{"--draft-model", kFull, "--speculative-config", R"({"method":"dflash","model":"x"})"}, "do not combine"},
      {{"--draft-model", kFull, "--num-speculative-tokens", "16"}, "at most 15", false},
      {{"--draft-model", kFull, "--num-speculative-tokens", "0"}, "must be >= 1"},
      {{"--draft-model", kFull, "--max-num-batched-tokens", "8"}, "--max-num-batched-tokens: must be >= 16", false},
      {{"--draft-model", kFull, "--max-model-len", "4096"}, "--max-model-len: must be in [1, 2048]"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--prompt", "hi", "--max-tokens", "2"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    Ran r = generate(args);
    EXPECT_EQ(r.exit_code, 2) << c.needle << ": " << r.err;
    ASSERT_FALSE(r.err_lines().empty());
    if (c.before_loading) {
      EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
    }
    EXPECT_NE(r.err_lines().back().find(c.needle), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(CliDFlash, FillsTheContextThenStopsLikePlainDecoding) {
  // The target holds 2048 positions; the verify rows of the last steps reach past it.
  std::vector<int32_t> ids(2040);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(100 + (i * 37) % 5000);
  const std::string json = nlohmann::json(ids).dump();
  Ran plain = generate({"--prompt-ids", json, "--temperature", "0", "--max-tokens", "100", "--ignore-eos"});
  Ran spec = generate(
      {"--prompt-ids", json, "--temperature", "0", "--max-tokens", "100", "--ignore-eos", "--draft-model", kSwa});
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_EQ(generated_tokens(spec), 8);
  EXPECT_NE(spec.err_lines().back().find("stop: context_full"), std::string::npos) << spec.err;
}

std::string write_prompts(const std::vector<std::string>& prompts) {
  const std::string path = scratch_dir() + "/prompts.jsonl";
  std::ofstream f(path);
  for (size_t i = 0; i < prompts.size(); ++i) {
    nlohmann::json j = {{"prompt", prompts[i]}};
    if (i % 2 == 0) j["task_id"] = "task/" + std::to_string(i);
    f << j.dump() << "\n";
  }
  return path;
}

TEST(CliDFlash, BatchModeRunsEveryPromptAndMatchesSingleRuns) {
  const std::vector<std::string> prompts = {kPrompt, "import os\n\ndef list_files(path):\n", "class Stack:\n",
                                            "def is_prime(n):\n"};
  const std::string file = write_prompts(prompts);
  const std::string out = scratch_dir() + "/out.jsonl";
  Ran r = generate({"--prompts-file", file, "--concurrency", "3", "--temperature", "0", "--max-tokens", "40",
                    "--draft-model", kFull, "--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<std::string> stdout_lines;
  for (std::string l; std::getline(lines, l);) stdout_lines.push_back(l);
  ASSERT_EQ(stdout_lines.size(), prompts.size() + 1) << r.out;
  EXPECT_EQ(stdout_lines[0].rfind("task/0: ", 0), 0u) << stdout_lines[0];
  EXPECT_EQ(stdout_lines[1].rfind("line 2: ", 0), 0u) << stdout_lines[1];
  EXPECT_NE(stdout_lines[0].find("tau "), std::string::npos) << stdout_lines[0];
  EXPECT_EQ(stdout_lines.back().rfind("total: 4 requests", 0), 0u) << stdout_lines.back();
  EXPECT_NE(stdout_lines.back().find("tok/s"), std::string::npos);
  EXPECT_NE(stdout_lines.back().find("dflash tau"), std::string::npos);

  std::ifstream in(out);
  std::vector<nlohmann::json> records;
  for (std::string l; std::getline(in, l);) records.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(records.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    Ran single = generate({"--prompt", prompts[i], "--temperature", "0", "--max-tokens", "40"});
    ASSERT_EQ(single.exit_code, 0);
    EXPECT_EQ(records[i].at("completion").get<std::string>(), single.out) << "prompt " << i;
    EXPECT_EQ(records[i].at("prompt").get<std::string>(), prompts[i]);
  }
}

TEST(CliDFlash, BatchModeUsageErrors) {
  const std::string file = write_prompts({"a"});
  Ran both = generate({"--prompts-file", file, "--prompt", "x"});
  EXPECT_EQ(both.exit_code, 2);
  Ran conc = generate({"--prompts-file", file, "--concurrency", "0"});
  EXPECT_EQ(conc.exit_code, 2);
  Ran no_file = generate({"--prompt", "x", "--concurrency", "2"});
  EXPECT_EQ(no_file.exit_code, 2);
  Ran vllm_spelling = generate({"--prompt", "x", "--max-num-seqs", "2"});
  EXPECT_EQ(vllm_spelling.exit_code, 2);
  EXPECT_NE(vllm_spelling.err.find("belong to batch mode"), std::string::npos) << vllm_spelling.err;
  const std::string bad = scratch_dir() + "/bad.jsonl";
  std::ofstream(bad) << "{\"prompt\": \"ok\"}\n{\"text\": \"no prompt key\"}\n";
  Ran r = generate({"--prompts-file", bad});
  EXPECT_EQ(r.exit_code, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace flashdraft::cli::test
