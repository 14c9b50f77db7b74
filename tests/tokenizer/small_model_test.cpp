// Parity on a 1000-token BPE that Hugging Face's own trainer produced with
// Qwen's normalizer/pre-tokenizer/decoder config (tests/fixtures/tokenizer/
// small, from tools/gen_tokenizer_golden.py --train-small): nothing in the
// tokenizer may depend on Qwen's vocabulary size or ids.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace flashdraft::tokenizer {
namespace {

struct Row {
  std::string text;
  std::vector<int32_t> ids, ids_nospecial;
  std::string decode, decode_skip;
};

const std::filesystem::path kDir = std::filesystem::path(FD_FIXTURES_DIR) / "tokenizer" / "small";

std::vector<Row> load_rows() {
  std::ifstream in(kDir / "golden.jsonl");
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    rows.push_back({j["text"], j["ids"], j["ids_nospecial"], j["decode"], j["decode_skip"]});
  }
  return rows;
}

TEST(SmallTrainedTokenizer, MatchesHuggingFace) {
  const Tokenizer tok = Tokenizer::load(kDir);
  const auto rows = load_rows();
  ASSERT_GE(rows.size(), 300u);
  size_t failures = 0;
  for (size_t i = 0; i < rows.size() && failures < 10; ++i) {
    const auto& r = rows[i];
    const std::string where = "small/golden.jsonl line " + std::to_string(i + 1);
    failures += tok.encode(r.text) != r.ids;
    EXPECT_EQ(tok.encode(r.text), r.ids) << where;
    EXPECT_EQ(tok.encode(r.text, false), r.ids_nospecial) << where;
    EXPECT_EQ(tok.decode(r.ids), r.decode) << where;
    EXPECT_EQ(tok.decode(r.ids, true), r.decode_skip) << where;
  }
}

TEST(SmallTrainedTokenizer, MetadataFromItsOwnFiles) {
  const Tokenizer tok = Tokenizer::load(kDir);
  std::ifstream in(kDir / "tokenizer.json");
  const auto root = nlohmann::json::parse(in);
  int32_t max_id = 0;
  for (const auto& [t, id] : root["model"]["vocab"].items()) max_id = std::max(max_id, id.get<int32_t>());
  for (const auto& t : root["added_tokens"]) max_id = std::max(max_id, t["id"].get<int32_t>());
  EXPECT_EQ(tok.vocab_size(), max_id + 1);
  EXPECT_LT(tok.vocab_size(), 2000);
  EXPECT_EQ(tok.eos_token_id(), tok.token_to_id("<|im_end|>"));
  EXPECT_TRUE(tok.eos_token_id().has_value());
  EXPECT_EQ(tok.chat_template(), "");
}

}  // namespace
}  // namespace flashdraft::tokenizer
