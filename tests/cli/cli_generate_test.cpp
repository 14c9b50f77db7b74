// `flashdraft generate` end to end on the random tiny Qwen3 model, checked
// against Hugging Face's greedy continuations (tests/fixtures/tiny-qwen3/
// reference.json) and against the model library driven directly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/greedy.h"
#include "model/qwen3_model.h"
#include "subprocess.h"
#include "tiny_model_dir.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::cli::test {
namespace {

// The numbers and stop reason of the summary line, the last line on stderr.
struct Summary {
  int prompt_tokens = -1, generated_tokens = -1;
  std::string stop;
};

int number_before(const std::string& line, const std::string& suffix) {
  auto at = line.find(suffix);
  if (at == std::string::npos) return -1;
  auto start = line.rfind(' ', at - 1) + 1;
  return std::stoi(line.substr(start, at - start));
}

Summary parse_summary(const Ran& r) {
  auto lines = r.err_lines();
  EXPECT_FALSE(lines.empty()) << "no summary on stderr";
  if (lines.empty()) return {};
  const std::string& line = lines.back();
  Summary s;
  s.prompt_tokens = number_before(line, " prompt tokens");
  s.generated_tokens = number_before(line, " generated tokens");
  auto at = line.find("stop: ");
  if (at != std::string::npos) s.stop = line.substr(at + 6, line.find_first_of(",\n", at) - at - 6);
  return s;
}

class CliGenerate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = new std::string(assemble_tiny_model("tiny-chat"));
    tok_ = new tokenizer::Tokenizer(tokenizer::Tokenizer::load(*model_dir_));
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete model_dir_;
    remove_scratch_dir();
  }

  static Ran generate(const std::vector<std::string>& extra, const std::string& dir = "") {
    std::vector<std::string> args = {"generate", "--model", dir.empty() ? *model_dir_ : dir};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_flashdraft(args);
  }
  // Runs and expects success; returns stdout.
  static std::string text_of(const std::vector<std::string>& extra, Summary* summary = nullptr) {
    Ran r = generate(extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (summary) *summary = parse_summary(r);
    return r.out;
  }
  static std::string ids_json(const std::vector<int32_t>& ids) { return nlohmann::json(ids).dump(); }

  // Greedy continuation computed by the model library itself (no CLI, no
  // sampler, no generation loop of ours).
  static std::vector<int32_t> library_greedy(const std::vector<int32_t>& prompt, int n) {
    auto ckpt = io::Checkpoint::open(*model_dir_);
    auto cfg = io::load_model_config(*model_dir_);
    auto model = model::Qwen3Model::load(ckpt, cfg);
    auto cache = model->new_cache();
    std::vector<int64_t> eos(cfg.eos_token_ids.begin(), cfg.eos_token_ids.end());
    return model::greedy_continue(*model, cache, prompt, n, eos);
  }

  static std::string* model_dir_;
  static tokenizer::Tokenizer* tok_;
};
std::string* CliGenerate::model_dir_ = nullptr;
tokenizer::Tokenizer* CliGenerate::tok_ = nullptr;

struct ReferencePrompt {
  std::vector<int32_t> ids, greedy;
};
std::vector<ReferencePrompt> reference_prompts() {
  std::ifstream in(FD_FIXTURES_DIR "/tiny-qwen3/reference.json");
  auto j = nlohmann::json::parse(in);
  std::vector<ReferencePrompt> out;
  for (const auto& p : j.at("prompts")) out.push_back({p.at("ids"), p.at("greedy")});
  return out;
}

TEST_F(CliGenerate, SpecialTokensInThePromptAreParsedUnlessSwitchedOff) {
  // A pre-rendered chat prompt: its markers are one token each by default (as
  // in Hugging Face tokenizers and vLLM), plain text with --no-special.
  const std::string prompt = "<|im_start|>user\nhi<|im_end|>\n";
  const auto count = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--prompt", prompt, "--max-tokens", "1", "--temperature", "0"});
    Summary s;
    text_of(extra, &s);
    return s.prompt_tokens;
  };
  EXPECT_EQ(count({}), static_cast<int64_t>(tok_->encode(prompt, true).size()));
  EXPECT_EQ(count({"--no-special"}), static_cast<int64_t>(tok_->encode(prompt, false).size()));
  EXPECT_LT(count({}), count({"--no-special"}));
}

TEST_F(CliGenerate, TemperatureZeroReproducesHuggingFaceGreedy) {
  auto prompts = reference_prompts();
  ASSERT_GE(prompts.size(), 3u);
  const int32_t im_end = *tok_->token_to_id("<|im_end|>"), endoftext = *tok_->token_to_id("<|endoftext|>");
  for (const auto& p : prompts) {
    for (int32_t id : p.greedy) ASSERT_TRUE(id != im_end && id != endoftext) << "reference hits EOS; adapt the test";
    Summary s;
    std::string out = text_of(
        {"--prompt-ids", ids_json(p.ids), "--temperature", "0", "--max-tokens", std::to_string(p.greedy.size())}, &s);
    EXPECT_EQ(out, tok_->decode(p.greedy, /*skip_special=*/true)) << "prompt of " << p.ids.size() << " tokens";
    EXPECT_EQ(s.prompt_tokens, static_cast<int>(p.ids.size()));
    EXPECT_EQ(s.generated_tokens, static_cast<int>(p.greedy.size()));
    EXPECT_EQ(s.stop, "max_tokens");
  }
}

TEST_F(CliGenerate, TextPromptGreedyEqualsTheModelLibrarysGreedy) {
  const std::string prompt = "The quick brown fox";
  auto ids = tok_->encode(prompt);
  auto expected = library_greedy(ids, 24);
  ASSERT_EQ(expected.size(), 24u);
  std::string first = text_of({"--prompt", prompt, "--temperature", "0", "--max-tokens", "24"});
  EXPECT_EQ(first, tok_->decode(expected, true));
  // And again: greedy is deterministic run to run.
  EXPECT_EQ(text_of({"--prompt", prompt, "--temperature", "0", "--max-tokens", "24"}), first);
}

TEST_F(CliGenerate, PromptFileIsTheSameAsPrompt) {
  std::string path = scratch_dir() + "/prompt.txt";
  std::ofstream(path) << "Hello world!\nHow are";
  EXPECT_EQ(text_of({"--prompt-file", path, "--temperature", "0", "--max-tokens", "8"}),
            text_of({"--prompt", "Hello world!\nHow are", "--temperature", "0", "--max-tokens", "8"}));
}

TEST_F(CliGenerate, SameSeedSameOutputOtherSeedOtherOutput) {
  std::vector<std::string> args = {"--prompt", "Hello", "--temperature", "1.0", "--max-tokens", "30", "--seed"};
  auto with_seed = [&](const char* seed) {
    auto a = args;
    a.push_back(seed);
    return a;
  };
  Ran first = generate(with_seed("1234"));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err_lines().back().find("seed 1234"), std::string::npos) << first.err;
  EXPECT_EQ(text_of(with_seed("1234")), first.out);
  EXPECT_NE(text_of(with_seed("1235")), first.out);
  // Sampling at temperature 1 really departs from greedy here.
  EXPECT_NE(text_of({"--prompt", "Hello", "--temperature", "0", "--max-tokens", "30"}), first.out);
}

TEST_F(CliGenerate, MaxTokensIsRespected) {
  auto p = reference_prompts().at(1);
  Summary s;
  std::string out = text_of({"--prompt-ids", ids_json(p.ids), "--temperature", "0", "--max-tokens", "7"}, &s);
  EXPECT_EQ(s.generated_tokens, 7);
  EXPECT_EQ(s.stop, "max_tokens");
  EXPECT_EQ(out, tok_->decode(std::span<const int32_t>(p.greedy.data(), 7), true));
  out = text_of({"--prompt-ids", ids_json(p.ids), "--max-tokens", "0"}, &s);
  EXPECT_EQ(out, "");
  EXPECT_EQ(s.generated_tokens, 0);
}

TEST_F(CliGenerate, StopStringsEndGenerationAndAreNeverPrinted) {
  const std::vector<std::string> base = {"--prompt", "The weather is", "--temperature", "0", "--max-tokens", "40"};
  std::string full = text_of(base);
  ASSERT_GT(full.size(), 20u) << full;
  // A stop string from the middle of the greedy text, spanning several bytes.
  std::string stop = full.substr(full.size() / 2, 3);
  auto cut = full.find(stop);
  auto args = base;
  args.insert(args.end(), {"--stop", stop});
  Summary s;
  std::string out = text_of(args, &s);
  EXPECT_EQ(out, full.substr(0, cut)) << "stop=" << nlohmann::json(stop).dump();
  EXPECT_EQ(s.stop.rfind("stop_string", 0), 0u) << s.stop;
  EXPECT_LT(s.generated_tokens, 40);

  // With several stop strings, the first to appear wins.
  std::string later = full.substr(full.size() * 3 / 4, 2);
  if (full.find(later) > cut) {
    args.insert(args.end(), {"--stop", later});
    EXPECT_EQ(text_of(args), full.substr(0, cut));
  }
  // A stop string that never appears changes nothing.
  EXPECT_EQ(
      text_of({"--prompt", "The weather is", "--temperature", "0", "--max-tokens", "40", "--stop", "\x01never\x02"}),
      full);
}

TEST_F(CliGenerate, EosFromEachConfigFileStopsGeneration) {
  auto p = reference_prompts().at(1);
  // The 4th greedy token, made an end-of-sequence token in turn by each file.
  const int32_t eos = p.greedy.at(3);
  size_t first = 0;
  while (p.greedy[first] != eos) ++first;
  std::string expected = tok_->decode(std::span<const int32_t>(p.greedy.data(), first), true);
  const int32_t im_end = *tok_->token_to_id("<|im_end|>");
  std::vector<std::function<void(ModelFiles&)>> patches = {
      [&](ModelFiles& f) { f.generation_config["eos_token_id"] = eos; },
      [&](ModelFiles& f) {
        f.generation_config.erase("eos_token_id");
        f.config["eos_token_id"] = {im_end, eos};
      },
      [&](ModelFiles& f) {
        f.generation_config["eos_token_id"] = im_end;
        f.config["eos_token_id"] = im_end;
        f.tokenizer_config["eos_token"] = tok_->id_to_token(eos);
      },
  };
  for (size_t i = 0; i < patches.size(); ++i) {
    std::string dir = assemble_tiny_model("eos-" + std::to_string(i), patches[i]);
    std::vector<std::string> args = {"--prompt-ids", ids_json(p.ids), "--temperature", "0", "--max-tokens", "20"};
    Ran r = generate(args, dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected) << "variant " << i;
    Summary s = parse_summary(r);
    EXPECT_EQ(s.stop, "eos") << "variant " << i;
    EXPECT_EQ(s.generated_tokens, static_cast<int>(first + 1)) << "variant " << i;

    args.push_back("--ignore-eos");
    r = generate(args, dir);
    EXPECT_EQ(parse_summary(r).generated_tokens, 20) << "variant " << i;
    EXPECT_EQ(r.out, tok_->decode(p.greedy, true));
  }
}

TEST_F(CliGenerate, ChatWrapsThePromptInTheModelsTemplate) {
  // What the fixture's ChatML template renders (tools/make_cli_tiny_tokenizer.py).
  const std::string rendered =
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n";
  auto ids = tok_->encode(rendered, /*parse_special=*/true);
  Summary chat, raw;
  std::string chat_out = text_of(
      {"--chat", "--system", "Be brief.", "--prompt", "Hello there", "--temperature", "0", "--max-tokens", "12"},
      &chat);
  std::string raw_out = text_of({"--prompt-ids", ids_json(ids), "--temperature", "0", "--max-tokens", "12"}, &raw);
  EXPECT_EQ(chat.prompt_tokens, static_cast<int>(ids.size()));
  EXPECT_EQ(chat_out, raw_out);

  auto no_think_ids = tok_->encode(rendered + "<think>\n\n</think>\n\n", true);
  text_of({"--chat", "--system", "Be brief.", "--prompt", "Hello there", "--no-think", "--max-tokens", "1"}, &chat);
  EXPECT_EQ(chat.prompt_tokens, static_cast<int>(no_think_ids.size()));
}

TEST_F(CliGenerate, ChatWithoutATemplateIsAUsageError) {
  std::string dir =
      assemble_tiny_model("no-template", [](ModelFiles& f) { f.tokenizer_config.erase("chat_template"); });
  Ran r = generate({"--chat", "--prompt", "hi"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("no chat template"), std::string::npos) << r.err;
}

TEST_F(CliGenerate, PromptThatIsNotUtf8IsAUsageError) {
  Ran r = generate({"--prompt", "caf\xe9"});
  EXPECT_EQ(r.exit_code, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("--prompt: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("UTF-8"), std::string::npos) << r.err;
}

TEST_F(CliGenerate, StderrHasTheLoadLineAndTheSummaryOnly) {
  Ran r = generate({"--prompt", "Hi", "--max-tokens", "3", "--seed", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_EQ(lines[0].rfind("flashdraft: loaded ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(" MB in "), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("tok/s"), std::string::npos) << lines[1];
}

TEST_F(CliGenerate, FillsTheContextThenStops) {
  // max_position_embeddings is 1024: a 1020-token prompt leaves room for 4.
  std::vector<int32_t> long_prompt(1020);
  for (size_t i = 0; i < long_prompt.size(); ++i) long_prompt[i] = static_cast<int32_t>((i * 37) % 500);
  Summary s;
  text_of({"--prompt-ids", ids_json(long_prompt), "--temperature", "0", "--max-tokens", "100"}, &s);
  EXPECT_EQ(s.generated_tokens, 4);
  EXPECT_EQ(s.stop, "context_full");

  long_prompt.resize(1024);
  Ran r = generate({"--prompt-ids", ids_json(long_prompt), "--max-tokens", "5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("1024 tokens"), std::string::npos) << r.err;
}

TEST_F(CliGenerate, MaxModelLenLimitsTheContextLikeMaxPositionEmbeddings) {
  std::vector<int32_t> prompt(20);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 37) % 500);
  Summary s;
  text_of({"--prompt-ids", ids_json(prompt), "--temperature", "0", "--max-tokens", "100", "--max-model-len", "23"},
          &s);
  EXPECT_EQ(s.generated_tokens, 3);
  EXPECT_EQ(s.stop, "context_full");

  Ran too_long = generate({"--prompt-ids", ids_json(prompt), "--max-model-len", "20"});
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_NE(too_long.err.find("holds 20 (max_model_len)"), std::string::npos) << too_long.err;
  Ran past_context = generate({"--prompt", "Hi", "--max-model-len", "1025"});
  EXPECT_EQ(past_context.exit_code, 2);
  EXPECT_NE(past_context.err.find("--max-model-len"), std::string::npos) << past_context.err;
}

TEST_F(CliGenerate, CorruptCheckpointFailsNamingTheFile) {
  std::string dir = assemble_tiny_model("corrupt");
  const std::string shard = "model-00002-of-00003.safetensors";
  auto path = std::filesystem::path(dir) / shard;
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  Ran r = generate({"--prompt", "Hi", "--max-tokens", "3"}, dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 2) << "a broken file is not a usage error";
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find(shard), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace flashdraft::cli::test
