// The published DFlash drafter configs (tests/fixtures/configs, copies of
// ../shared/configs) run DFlash steps on the CPU with dummy weights. Real
// widths (27B, 8B) do not fit a CI machine in f32, so each drafter keeps
// everything that decides how it drafts (layer count and kinds, causality,
// block size, taps, mask id, vocabulary, num_target_layers, RoPE) at hidden
// size 64, and drafts for a target of as many layers at that width. Sliding
// windows shrink to 8 so that the window cuts into prompt + block. Greedy
// output must equal plain decoding, and drafts must actually be verified.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <unistd.h>

#include "engine/llm_engine.h"
#include "io/model_config.h"
#include "model/dflash_drafter.h"
#include "model/qwen3_model.h"

namespace flashdraft::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kConfigs = fs::path(FD_FIXTURES_DIR) / "configs";

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

void write_json(const fs::path& p, const json& j) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << j.dump(2);
}

// The drafter at width 64 (4 query heads, 2 kv heads of 16); every other field as published.
json shrink_drafter(json c) {
  c["hidden_size"] = 64;
  c["intermediate_size"] = 96;
  c["num_attention_heads"] = 4;
  c["num_key_value_heads"] = 2;
  c["head_dim"] = 16;
  if (c.contains("sliding_window") && c["sliding_window"].is_number()) c["sliding_window"] = 8;
  return c;
}

// A target for it: tiny-qwen3's layout with the drafter's vocabulary and target layer count.
json target_for(const json& drafter) {
  json t = read_json(fs::path(FD_FIXTURES_DIR) / "tiny-qwen3" / "config.json");
  t["num_hidden_layers"] = drafter["num_target_layers"];
  t["vocab_size"] = drafter["vocab_size"];
  t["tie_word_embeddings"] = false;
  t["max_position_embeddings"] = 4096;
  t.erase("eos_token_id");
  return t;
}

std::vector<std::vector<int32_t>> run(model::Qwen3Model& target, model::DFlashDrafter* drafter,
                                      const std::vector<std::vector<int32_t>>& prompts, SpecStats* stats) {
  EngineConfig c;
  c.max_running = 4;
  c.max_model_len = 256;
  c.num_kv_blocks = 64;
  // Fixed full-length drafts: the test is about every draft position, and
  // adaptive speculation may (rightly, on a loaded machine) choose not to draft.
  c.adaptive_speculation = false;
  Engine engine(target, drafter, c);
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 24;
  p.ignore_eos = true;
  std::vector<RequestId> ids;
  for (const auto& prompt : prompts) ids.push_back(engine.add(prompt, p));
  while (engine.has_work()) engine.step();
  std::vector<std::vector<int32_t>> out;
  for (RequestId id : ids) out.push_back(engine.result(id).tokens);
  if (stats) *stats = engine.stats();
  return out;
}

// A fresh directory under the temp dir, removed afterwards.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string t = (fs::temp_directory_path() / "fd-published-XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

class PublishedDrafter : public ::testing::TestWithParam<std::string> {};

TEST_P(PublishedDrafter, DraftsLosslesslyAtReducedWidth) {
  const json published = read_json(kConfigs / GetParam() / "config.json");
  ScratchDir scratch;
  const fs::path tdir = scratch.path / "target", ddir = scratch.path / "drafter";
  const json dcfg = shrink_drafter(published);
  write_json(ddir / "config.json", dcfg);
  write_json(tdir / "config.json", target_for(published));

  auto target = model::Qwen3Model::load_dummy(io::load_model_config(tdir), nullptr, 3);
  auto drafter = model::DFlashDrafter::load_dummy(ddir, *target, 5);
  const auto& d = drafter->config();
  EXPECT_EQ(d.block_size, published["block_size"].get<int64_t>());
  EXPECT_EQ(d.mask_token_id, published["dflash_config"]["mask_token_id"].get<int32_t>());
  EXPECT_EQ(d.target_layer_ids, published["dflash_config"]["target_layer_ids"].get<std::vector<int64_t>>());

  std::mt19937 gen(7);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(published["vocab_size"].get<int64_t>()) - 1);
  std::vector<std::vector<int32_t>> prompts(3);
  for (size_t i = 0; i < prompts.size(); ++i)
    for (size_t t = 0; t < 9 + 7 * i; ++t) prompts[i].push_back(id(gen));

  const auto plain = run(*target, nullptr, prompts, nullptr);
  SpecStats stats;
  const auto dflash = run(*target, drafter.get(), prompts, &stats);
  EXPECT_EQ(dflash, plain);
  EXPECT_GT(stats.drafts(), 0);
  EXPECT_GT(stats.draft_tokens(), stats.drafts());  // blocks of more than one token were verified
}

INSTANTIATE_TEST_SUITE_P(Configs, PublishedDrafter,
                         ::testing::Values("qwen3-8b-dflash-b16", "qwen3-4b-dflash-b16", "qwen3.5-4b-dflash",
                                           "qwen3.6-27b-dflash"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-' || ch == '.') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace flashdraft::engine
