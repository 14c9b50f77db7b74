// `flashdraft tokenize` / `detokenize` on the real Qwen3 tokenizer (fetched
// by the ctest fixture). The directory holds only tokenizer files, so these
// also prove that the commands never touch weights or config.json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/chat_prompt.h"
#include "subprocess.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::cli::test {
namespace {

const std::string kQwen3 = FD_QWEN3_TOKENIZER_DIR;

std::vector<int32_t> parse_ids(const std::string& out) {
  EXPECT_TRUE(!out.empty() && out.back() == '\n') << "output should be one line: " << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_TRUE(j.is_array());
  return j.get<std::vector<int32_t>>();
}

std::vector<int32_t> tokenize(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"tokenize", "--model", kQwen3};
  args.insert(args.end(), extra.begin(), extra.end());
  Ran r = run_flashdraft(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return parse_ids(r.out);
}

std::string detokenize(const std::vector<int32_t>& ids, bool skip_special = false) {
  std::vector<std::string> args = {"detokenize", "--model", kQwen3, "--ids", nlohmann::json(ids).dump()};
  if (skip_special) args.push_back("--skip-special");
  Ran r = run_flashdraft(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;  // not a terminal: exactly the text, no newline added
}

TEST(CliTokenize, KnownQwen3Ids) {
  // From Qwen3's vocabulary: "Hello", ",", "Ġworld", "!".
  EXPECT_EQ(tokenize({"--text", "Hello, world!"}), (std::vector<int32_t>{9707, 11, 1879, 0}));
  EXPECT_EQ(tokenize({"--text", ""}), std::vector<int32_t>{});
}

TEST(CliTokenize, AgreesWithTheTokenizerLibrary) {
  auto tok = tokenizer::Tokenizer::load(kQwen3);
  const std::string text = "def f(x):\n\treturn x ** 2  # 平方 \xf0\x9f\x91\x8d\r\n\n   end <|endoftext|>";
  EXPECT_EQ(tokenize({"--text", text}), tok.encode(text, true));
  EXPECT_EQ(tokenize({"--text", text, "--no-special"}), tok.encode(text, false));
}

TEST(CliTokenize, SpecialTokensAreParsedUnlessSwitchedOff) {
  // As Hugging Face tokenizers and vLLM do by default.
  const std::string text = "<|im_start|>user\nhi<|im_end|>";
  auto special = tokenize({"--text", text});
  auto plain = tokenize({"--text", text, "--no-special"});
  EXPECT_EQ(tokenize({"--text", text, "--special"}), special);
  EXPECT_EQ(special.front(), 151644);  // <|im_start|>
  EXPECT_EQ(special.back(), 151645);   // <|im_end|>
  for (int32_t id : plain) EXPECT_LT(id, 151643) << "special token parsed with --no-special";
  EXPECT_GT(plain.size(), special.size());
}

TEST(CliTokenize, FileGivesTheSameIdsAsText) {
  const std::string text = "line one\nline two \xe2\x80\x94 \xe4\xb8\xad\xe6\x96\x87\n";
  std::string path = std::string(FD_CLI_WORK_DIR) + "-prompt-" + std::to_string(getpid()) + ".txt";
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(tokenize({"--file", path}), tokenize({"--text", text}));
  std::remove(path.c_str());
}

TEST(CliTokenize, RoundTripsThroughDetokenize) {
  for (std::string text : {std::string("Hello, world!"), std::string("  leading spaces and\ttabs\r\n"),
                           std::string("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe6\x96\x87 "
                                       "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7"),
                           std::string("x = [1, 2, 3]; // caf\xc3\xa9\n")}) {
    EXPECT_EQ(detokenize(tokenize({"--text", text})), text);
  }
}

TEST(CliDetokenize, KeepsSpecialTokensUnlessSkipped) {
  std::vector<int32_t> ids = {151644, 872, 198, 6023, 151645};
  std::string kept = detokenize(ids);
  EXPECT_EQ(kept.rfind("<|im_start|>", 0), 0u) << kept;
  EXPECT_NE(kept.find("<|im_end|>"), std::string::npos) << kept;
  std::string skipped = detokenize(ids, true);
  EXPECT_EQ(skipped.find("<|im_"), std::string::npos) << skipped;
  EXPECT_EQ(kept, "<|im_start|>" + skipped + "<|im_end|>");
}

// `generate --chat` renders Qwen3's own template (the real one, from the
// fetched tokenizer_config.json) the way transformers does.
TEST(CliChatPrompt, RendersQwen3Template) {
  auto tok = tokenizer::Tokenizer::load(kQwen3);
  // Only the tokenizer and its template matter here (the directory has no config.json).
  const serving::ModelFiles qwen3{kQwen3, {}, {}, tok, {}, {}, chat::ChatTemplate::parse(tok.chat_template()), ""};
  EXPECT_EQ(render_chat_prompt(qwen3, std::string("You are terse."), "Hi!", true),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat_prompt(qwen3, std::nullopt, "Hi!", false),
            "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

}  // namespace
}  // namespace flashdraft::cli::test
