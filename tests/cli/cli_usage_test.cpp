// `flashdraft` as a user meets it: help text, and one clear line with exit
// code 2 for every kind of bad usage.
#include <gtest/gtest.h>

#include <cctype>

#include "subprocess.h"

namespace flashdraft::cli::test {
namespace {

const std::string kTinyQwen3 = FD_FIXTURES_DIR "/tiny-qwen3";              // weights, no tokenizer
const std::string kTinyTokenizer = FD_FIXTURES_DIR "/cli/tiny-tokenizer";  // tokenizer only

// Exactly one line on stderr, "flashdraft: error: ...", containing `needle`;
// nothing on stdout; exit code 2.
void expect_usage_error(const std::vector<std::string>& args, const std::string& needle) {
  Ran r = run_flashdraft(args);
  std::string cmd;
  for (const auto& a : args) cmd += " " + a;
  EXPECT_EQ(r.exit_code, 2) << cmd << "\nstderr: " << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << cmd << "\nstderr: " << r.err;
  EXPECT_EQ(r.err.rfind("flashdraft: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << cmd << "\nwanted '" << needle << "' in: " << r.err;
  EXPECT_EQ(r.out, "") << cmd;
}

void expect_help_lists(const std::vector<std::string>& args, const std::vector<std::string>& flags) {
  Ran r = run_flashdraft(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& flag : flags) {
    // Each flag is listed with its own description on the same line.
    auto at = r.out.find("  " + flag + " ");
    ASSERT_NE(at, std::string::npos) << flag << " missing from help:\n" << r.out;
    auto line_end = r.out.find('\n', at);
    std::string line = r.out.substr(at, line_end - at);
    EXPECT_GT(line.size(), flag.size() + 20) << "no description for " << flag << ": " << line;
  }
}

TEST(CliHelp, TopLevelListsSubcommands) {
  Ran r = run_flashdraft({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* sub : {"generate", "tokenize", "detokenize"}) {
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub << " missing:\n" << r.out;
  }
}

TEST(CliHelp, Version) {
  Ran r = run_flashdraft({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.out.rfind("flashdraft ", 0), 0u) << r.out;
  EXPECT_TRUE(r.out.size() > 11 && std::isdigit(static_cast<unsigned char>(r.out[11]))) << r.out;
}

TEST(CliHelp, GenerateDocumentsEveryFlagAndItsDefault) {
  std::vector<std::string> flags = {"--model",  "--prompt",   "--prompt-file", "--prompt-ids",  "--chat",
                                    "--system", "--no-think", "--max-tokens",  "--temperature", "--top-p",
                                    "--top-k",  "--min-p",    "--seed",        "--stop",        "--ignore-eos"};
  expect_help_lists({"generate", "--help"}, flags);
  Ran r = run_flashdraft({"generate", "--help"});
  // Defaults are spelled out: the model's own values, and our fallback.
  EXPECT_NE(r.out.find("generation_config.json"), std::string::npos);
  EXPECT_NE(r.out.find("else 256"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("default: random"), std::string::npos) << r.out;
}

TEST(CliHelp, TokenizeAndDetokenizeDocumentEveryFlag) {
  expect_help_lists({"tokenize", "--help"}, {"--model", "--text", "--file", "--special"});
  expect_help_lists({"detokenize", "--help"}, {"--model", "--ids", "--skip-special"});
}

TEST(CliUsage, MissingOrUnknownSubcommand) {
  expect_usage_error({}, "subcommand");
  expect_usage_error({"frobnicate"}, "frobnicate");
}

TEST(CliUsage, UnknownFlag) {
  expect_usage_error({"generate", "--model", kTinyQwen3, "--prompt", "hi", "--bogus"}, "--bogus");
  expect_usage_error({"tokenize", "--model", kTinyTokenizer, "--text", "hi", "--frob", "1"}, "--frob");
}

TEST(CliUsage, MissingRequiredFlag) {
  expect_usage_error({"generate", "--prompt", "hi"}, "--model");
  expect_usage_error({"detokenize", "--model", kTinyTokenizer}, "--ids");
}

TEST(CliUsage, PromptSourceMustBeExactlyOne) {
  expect_usage_error({"generate", "--model", kTinyQwen3}, "--prompt");
  expect_usage_error({"generate", "--model", kTinyQwen3, "--prompt", "a", "--prompt-ids", "[1]"}, "exactly one");
  expect_usage_error({"tokenize", "--model", kTinyTokenizer}, "--text");
  expect_usage_error({"tokenize", "--model", kTinyTokenizer, "--text", "a", "--file", "b"}, "--file");
}

TEST(CliUsage, ChatOnlyFlagsNeedChat) {
  expect_usage_error({"generate", "--model", kTinyQwen3, "--prompt", "a", "--system", "s"}, "--chat");
  expect_usage_error({"generate", "--model", kTinyQwen3, "--prompt", "a", "--no-think"}, "--chat");
}

TEST(CliUsage, OutOfRangeSamplingValues) {
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate", "--model", kTinyQwen3, "--prompt", "hi"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_usage_error(gen({"--max-tokens", "-1"}), "--max-tokens");
  expect_usage_error(gen({"--temperature", "-0.5"}), "--temperature");
  expect_usage_error(gen({"--top-p", "0"}), "--top-p");
  expect_usage_error(gen({"--top-p", "1.5"}), "--top-p");
  expect_usage_error(gen({"--top-k", "-3"}), "--top-k");
  expect_usage_error(gen({"--min-p", "2"}), "--min-p");
  expect_usage_error(gen({"--stop", ""}), "--stop");
  // Each --stop takes one string; a second word is not silently a second stop.
  expect_usage_error(gen({"--stop", "alpha", "omega"}), "omega");
}

TEST(CliUsage, ValuesOfTheWrongType) {
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate", "--model", kTinyQwen3, "--prompt", "hi"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_usage_error(gen({"--max-tokens", "lots"}), "--max-tokens");
  expect_usage_error(gen({"--temperature", "warm"}), "--temperature");
  expect_usage_error(gen({"--seed", "-1"}), "--seed");
  expect_usage_error({"detokenize", "--model", kTinyTokenizer, "--ids", "[1, two]"}, "--ids");
  expect_usage_error({"detokenize", "--model", kTinyTokenizer, "--ids", "[1, 2.5]"}, "--ids");
  expect_usage_error({"detokenize", "--model", kTinyTokenizer, "--ids", "[1, 100000]"}, "outside the vocabulary");
}

TEST(CliUsage, TextThatIsNotUtf8) {
  expect_usage_error({"tokenize", "--model", kTinyTokenizer, "--text", "ok \xff\xfe"}, "--text: ");
}

TEST(CliUsage, BadModelPaths) {
  expect_usage_error({"generate", "--model", "/no/such/dir", "--prompt", "hi"},
                     "--model DIR: no such directory: /no/such/dir");
  expect_usage_error({"generate", "--model", FD_FIXTURES_DIR "/cli", "--prompt", "hi"},
                     "--model DIR: no config.json in " FD_FIXTURES_DIR "/cli");
  expect_usage_error({"generate", "--model", kTinyQwen3, "--prompt", "hi"},
                     "--model DIR: no tokenizer.json in " + kTinyQwen3);
  expect_usage_error({"generate", "--model", kTinyQwen3 + "/config.json", "--prompt", "hi"}, "is a file");
  expect_usage_error({"tokenize", "--model", kTinyQwen3, "--text", "hi"}, "no tokenizer.json in");
  expect_usage_error({"tokenize", "--model", kTinyTokenizer, "--file", "/no/such/file.txt"}, "/no/such/file.txt");
  expect_usage_error({"generate", "--model", kTinyQwen3, "--prompt-file", "/no/such/prompt.txt"},
                     "/no/such/prompt.txt");
}

TEST(CliUsage, RelativeModelPathIsReportedAbsolute) {
  Ran r = run_flashdraft({"generate", "--model", "no-such-relative-dir", "--prompt", "hi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/no-such-relative-dir"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(" no-such-relative-dir"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace flashdraft::cli::test
