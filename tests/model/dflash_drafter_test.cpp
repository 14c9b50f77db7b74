// The DFlash drafter on small random drafters over the tiny-qwen3 target:
// against a naive double-precision forward of DFLASH.md section 3, paged and
// batched against one request at a time, attention kinds, live taps, and the
// errors of load and of bad batch metadata.
#include "model/dflash_drafter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/error.h"
#include "dflash_test_drafter.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "reference_data.h"

namespace flashdraft::model {
namespace {

using nlohmann::json;
using testing::fixture;
using testing::ScratchDir;

double rel_l2(const std::vector<float>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  return rel_l2(a, std::vector<double>(b.begin(), b.end()));
}

std::vector<float> random_taps(int64_t rows, int64_t width, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows * width));
  for (float& x : v) x = dist(gen);
  return v;
}

class DFlashDrafterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto dir = fixture("tiny-qwen3");
    ckpt_ = std::make_unique<io::Checkpoint>(io::Checkpoint::open(dir));
    target_ = Qwen3Model::load(*ckpt_, io::load_model_config(dir));
    embed_ = ckpt_->load_f32("model.embed_tokens.weight", std::vector<int64_t>{512, 64});  // tied: also lm_head
  }

  // Writes a drafter with `config` and random weights (seed) and loads it.
  std::unique_ptr<DFlashDrafter> make(const json& config, uint32_t seed = 1) {
    const auto dir = scratch_.path() / ("d" + std::to_string(count_++));
    testing::write_drafter(dir, config, testing::random_drafter_weights(config, seed));
    return DFlashDrafter::load(dir, *target_);
  }
  std::filesystem::path last_dir() const { return scratch_.path() / ("d" + std::to_string(count_ - 1)); }

  std::unique_ptr<io::Checkpoint> ckpt_;
  std::unique_ptr<Qwen3Model> target_;
  std::vector<float> embed_;
  ScratchDir scratch_;
  int count_ = 0;
};

struct Variant {
  const char* name;
  std::function<void(json&)> edit;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class DFlashDrafterVariants : public DFlashDrafterTest, public ::testing::WithParamInterface<Variant> {};

TEST_P(DFlashDrafterVariants, MatchesNaiveForward) {
  json config = testing::tiny_drafter_config();
  GetParam().edit(config);
  auto drafter = make(config);
  const int64_t S = 13, width = drafter->config().num_taps() * 64;
  const auto taps = random_taps(S, width, 5);
  io::Checkpoint dck = io::Checkpoint::open(last_dir());
  for (int64_t B : {8, 5, 2}) {  // a full block, fewer speculative tokens, one
    std::vector<float> got;
    drafter->draft_contiguous(taps.data(), S, 17, B, got);
    const auto want = testing::naive_draft(config, dck, embed_, embed_, taps, S, 17, B);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(rel_l2(got, want), 1e-5) << "block of " << B;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, DFlashDrafterVariants,
                         ::testing::Values(Variant{"SlidingThenFull", [](json&) {}},
                                           Variant{"FullBidirectional",
                                                   [](json& c) {
                                                     c["layer_types"] = {"full_attention", "full_attention"};
                                                     c["sliding_window"] = nullptr;
                                                     c["use_sliding_window"] = false;
                                                   }},
                                           Variant{"FullCausal",
                                                   [](json& c) {
                                                     c["layer_types"] = {"full_attention", "full_attention"};
                                                     c["is_causal"] = true;
                                                   }},
                                           Variant{"UseSwa",
                                                   [](json& c) {
                                                     c["layer_types"] = {"full_attention", "full_attention"};
                                                     c["dflash_config"]["use_swa"] = true;
                                                     c["dflash_config"]["swa_window_size"] = 3;
                                                   }},
                                           Variant{"SlidingNonCausal",  // window 4 < block 8: (p - 4, p + 4)
                                                   [](json& c) { c["is_causal"] = false; }},
                                           Variant{"UseSwaNonCausal",
                                                   [](json& c) {
                                                     c["layer_types"] = {"full_attention", "full_attention"};
                                                     c["dflash_config"]["use_swa"] = true;
                                                     c["dflash_config"]["swa_window_size"] = 3;
                                                     c["dflash_config"]["causal"] = false;
                                                   }},
                                           Variant{"SoftcapAndEmbeddingScale",
                                                   [](json& c) {
                                                     c["final_logit_softcapping"] = 0.5;
                                                     c["input_embedding_scale"] = 3.0;
                                                   }},
                                           Variant{"ThreeTaps",
                                                   [](json& c) {
                                                     c["dflash_config"]["target_layer_ids"] = {2, 0, 1};
                                                   }}),
                         [](const ::testing::TestParamInfo<Variant>& info) { return std::string(info.param.name); });

TEST_F(DFlashDrafterTest, SoftcapIsTanhOfTheRawLogits) {
  json config = testing::tiny_drafter_config();
  const auto taps = random_taps(6, 128, 3);
  std::vector<float> raw, capped;
  make(config, 4)->draft_contiguous(taps.data(), 6, 3, 8, raw);
  config["final_logit_softcapping"] = 2.0;
  make(config, 4)->draft_contiguous(taps.data(), 6, 3, 8, capped);
  ASSERT_EQ(raw.size(), capped.size());
  float raw_max = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    raw_max = std::max(raw_max, std::abs(raw[i]));
    EXPECT_NEAR(capped[i], std::tanh(raw[i] / 2.0) * 2.0, 1e-5) << i;
  }
  EXPECT_GT(raw_max, 2.0f);  // the cap did bite
}

// The engine's use: requests batched together, context written in chunks as
// tokens get committed, shuffled block tables, poisoned unused slots.
TEST_F(DFlashDrafterTest, PagedBatchEqualsOneRequestAtATime) {
  auto drafter = make(testing::tiny_drafter_config());
  const int64_t width = 2 * 64, bs = 4, L = 2;
  const std::vector<int64_t> ctx_len = {13, 1, 30};
  const std::vector<int64_t> block_rows = {8, 3, 8};
  const std::vector<int32_t> anchors = {17, 400, 5};
  std::vector<std::vector<float>> taps;
  for (size_t s = 0; s < 3; ++s) taps.push_back(random_taps(ctx_len[s], width, 10 + static_cast<uint32_t>(s)));

  // Pool: 2 target-like layers first (offset), then the drafter's; NaN everywhere.
  std::vector<KVLayerShape> shapes = {{3, 8}, {3, 8}};
  for (const auto& s : drafter->kv_layers()) shapes.push_back(s);
  const int64_t n_blocks = 40;
  KVPool pool(target_->backend(), n_blocks, bs, shapes);
  for (int64_t l = 0; l < pool.num_layers(); ++l) {
    target_->backend().fill_nan(pool.k(l));
    target_->backend().fill_nan(pool.v(l));
  }
  std::vector<int32_t> all(static_cast<size_t>(n_blocks));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), std::mt19937(3));
  std::vector<std::vector<int32_t>> tables(3);
  size_t next = 0;
  for (size_t s = 0; s < 3; ++s) {
    const int64_t need = (ctx_len[s] + block_rows[s] + bs - 1) / bs;
    tables[s].assign(all.begin() + static_cast<int64_t>(next), all.begin() + static_cast<int64_t>(next) + need);
    next += static_cast<size_t>(need);
  }

  // Context in two batched chunks: first ~half of every request, then the rest.
  for (int pass = 0; pass < 2; ++pass) {
    BatchContext batch;
    std::vector<float> rows;
    for (size_t s = 0; s < 3; ++s) {
      const int64_t half = (ctx_len[s] + 1) / 2;
      const int64_t begin = pass == 0 ? 0 : half, end = pass == 0 ? half : ctx_len[s];
      if (end == begin) continue;
      batch.seqs.push_back(SeqSlice{batch.total_rows(), end - begin, begin, tables[s], false});
      rows.insert(rows.end(), taps[s].begin() + begin * width, taps[s].begin() + end * width);
    }
    drafter->write_context(rows.data(), batch, pool, L);
  }
  BatchContext blocks;
  for (size_t s = 0; s < 3; ++s)
    blocks.seqs.push_back(SeqSlice{blocks.total_rows(), block_rows[s], ctx_len[s], tables[s], true});
  std::vector<float> batched;
  drafter->draft(anchors, blocks, pool, L, batched);
  ASSERT_EQ(batched.size(), static_cast<size_t>((7 + 2 + 7) * 512));

  size_t offset = 0;
  for (size_t s = 0; s < 3; ++s) {
    std::vector<float> one;
    drafter->draft_contiguous(taps[s].data(), ctx_len[s], anchors[s], block_rows[s], one);
    std::vector<float> part(batched.begin() + static_cast<int64_t>(offset),
                            batched.begin() + static_cast<int64_t>(offset + one.size()));
    EXPECT_LT(rel_l2(part, one), 1e-6) << "request " << s;
    offset += one.size();
  }
}

// What is true of windows: a sliding layer whose window covers the whole
// context and block sees exactly what a causal full layer sees. It is not a
// bidirectional full layer, and a window shorter than the context changes
// the result.
TEST_F(DFlashDrafterTest, WideSlidingWindowEqualsCausalFullLayer) {
  const int64_t S = 20, B = 8;
  const auto taps = random_taps(S, 128, 21);
  const auto run = [&](const std::function<void(json&)>& edit) {
    json c = testing::tiny_drafter_config();
    edit(c);
    std::vector<float> logits;
    make(c, 7)->draft_contiguous(taps.data(), S, 9, B, logits);
    return logits;
  };
  const auto wide = run([&](json& c) {
    c["layer_types"] = {"sliding_attention", "sliding_attention"};
    c["sliding_window"] = S + B;
  });
  const auto causal_full = run([](json& c) {
    c["layer_types"] = {"full_attention", "full_attention"};
    c["dflash_config"]["causal"] = true;
  });
  const auto bidirectional = run([](json& c) { c["layer_types"] = {"full_attention", "full_attention"}; });
  const auto narrow = run([](json& c) { c["layer_types"] = {"sliding_attention", "sliding_attention"}; });
  EXPECT_LT(rel_l2(wide, causal_full), 1e-6);
  EXPECT_GT(rel_l2(wide, bidirectional), 1e-3);
  EXPECT_GT(rel_l2(wide, narrow), 1e-3);
}

// The taps are live: the same drafter weights, fed by the target tapped at
// the layers its config names, give different drafts for different tap ids.
TEST_F(DFlashDrafterTest, TapIdsChangeTheOutput) {
  const std::vector<int32_t> prompt = {1, 40, 41, 42, 300, 301, 7, 8, 9, 100, 200, 250};
  const auto run = [&](std::vector<int64_t> ids) {
    json c = testing::tiny_drafter_config();
    c["dflash_config"]["target_layer_ids"] = ids;
    auto drafter = make(c, 11);
    EXPECT_EQ(drafter->config().target_layer_ids, ids);
    target_->set_tap_layers(drafter->config().target_layer_ids);
    auto cache = target_->new_cache();
    std::vector<float> logits;
    target_->forward(prompt, cache, logits);
    std::vector<float> taps = target_->taps(), out;
    drafter->draft_contiguous(taps.data(), static_cast<int64_t>(prompt.size()), 3, 8, out);
    return out;
  };
  const auto a = run({0, 2}), a2 = run({0, 2}), b = run({1, 2}), c = run({0, 1});
  EXPECT_EQ(a, a2);
  EXPECT_GT(rel_l2(b, a), 1e-2);
  EXPECT_GT(rel_l2(c, a), 1e-2);
}

TEST_F(DFlashDrafterTest, DraftWithoutContextAndCountsOutputRows) {
  auto drafter = make(testing::tiny_drafter_config());
  std::vector<float> logits;
  drafter->draft_contiguous(nullptr, 0, 3, 8, logits);
  EXPECT_EQ(logits.size(), static_cast<size_t>(7 * 512));
  drafter->draft_contiguous(nullptr, 0, 3, 1, logits);  // anchor only: nothing to predict
  EXPECT_TRUE(logits.empty());
}

// ---- load errors ----

std::string load_error(DFlashDrafterTest& t, const std::function<void(json&, testing::Tensors&)>& edit,
                       const std::filesystem::path& dir, Qwen3Model& target) {
  json c = testing::tiny_drafter_config();
  auto w = testing::random_drafter_weights(c, 1);
  edit(c, w);
  testing::write_drafter(dir, c, w);
  (void)t;
  try {
    DFlashDrafter::load(dir, target);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(DFlashDrafterTest, LoadErrorsNameTheProblem) {
  int n = 0;
  const auto err = [&](const std::function<void(json&, testing::Tensors&)>& edit) {
    return load_error(*this, edit, scratch_.path() / ("bad" + std::to_string(n++)), *target_);
  };
  // fc width = taps x target hidden
  auto e = err([](json& c, testing::Tensors&) { c["dflash_config"]["target_layer_ids"] = {0, 1, 2}; });
  EXPECT_NE(e.find("fc.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("3 taps"), std::string::npos) << e;
  EXPECT_NE(e.find("bad0"), std::string::npos) << e;
  // head geometry vs weights
  e = err([](json& c, testing::Tensors&) { c["head_dim"] = 8; });
  EXPECT_NE(e.find("q_proj"), std::string::npos) << e;
  EXPECT_NE(e.find("num_attention_heads 4 x head_dim 8"), std::string::npos) << e;
  e = err([](json& c, testing::Tensors&) { c["num_key_value_heads"] = 1; });
  EXPECT_NE(e.find("k_proj"), std::string::npos) << e;
  EXPECT_NE(e.find("num_key_value_heads 1"), std::string::npos) << e;
  // kv heads must divide heads (io's check, reached through the drafter loader)
  e = err([](json& c, testing::Tensors&) { c["num_key_value_heads"] = 3; });
  EXPECT_NE(e.find("num_key_value_heads"), std::string::npos) << e;
  // a tensor with no place (drafters borrow the target's embedding)
  e = err([](json&, testing::Tensors& w) { w["embed_tokens.weight"] = {{512, 64}, std::vector<float>(512 * 64)}; });
  EXPECT_NE(e.find("embed_tokens.weight"), std::string::npos) << e;
  e = err([](json&, testing::Tensors& w) { w.erase("layers.1.mlp.up_proj.weight"); });
  EXPECT_NE(e.find("layers.1.mlp.up_proj.weight"), std::string::npos) << e;
  // config checks against the target still run on load
  e = err([](json& c, testing::Tensors&) { c["dflash_config"]["mask_token_id"] = 512; });
  EXPECT_NE(e.find("mask_token_id"), std::string::npos) << e;
}

// ---- bad batch metadata ----

TEST_F(DFlashDrafterTest, RejectsBadBatches) {
  auto drafter = make(testing::tiny_drafter_config());
  const auto taps = random_taps(10, 128, 2);
  std::vector<int32_t> table = {0, 1, 2};  // 12 positions at block size 4
  KVPool pool(target_->backend(), 3, 4, drafter->kv_layers());
  std::vector<float> logits;
  const int32_t anchor = 3;
  const auto ctx = [&](int64_t n, int64_t pos0) {
    BatchContext b;
    b.seqs.push_back(SeqSlice{0, n, pos0, table, false});
    return b;
  };
  EXPECT_NO_THROW(drafter->write_context(taps.data(), ctx(10, 0), pool, 0));
  EXPECT_THROW(drafter->write_context(taps.data(), ctx(10, 4), pool, 0), Error);  // past the table
  EXPECT_THROW(drafter->write_context(taps.data(), ctx(2, 0), pool, 1), Error);   // layers past the pool
  KVPool wrong(target_->backend(), 3, 4, {{2, 8}, {2, 8}});
  EXPECT_THROW(drafter->write_context(taps.data(), ctx(2, 0), wrong, 0), Error);  // wrong layer shapes
  // The block's K/V go to its own slots, so the table must cover the block too.
  EXPECT_NO_THROW(drafter->draft(std::span(&anchor, 1), ctx(2, 10), pool, 0, logits));
  EXPECT_THROW(drafter->draft(std::span(&anchor, 1), ctx(8, 10), pool, 0, logits), Error);  // block past the table
  EXPECT_THROW(drafter->draft(std::span(&anchor, 1), ctx(9, 0), pool, 0, logits), Error);   // > block_size
  EXPECT_THROW(drafter->draft(std::span(&anchor, 1), ctx(2, 13), pool, 0, logits), Error);  // context past table
  EXPECT_THROW(drafter->draft({}, ctx(2, 10), pool, 0, logits), Error);                     // no anchor
  const int32_t bad_anchor = 512;
  EXPECT_THROW(drafter->draft(std::span(&bad_anchor, 1), ctx(2, 10), pool, 0, logits), Error);
  std::vector<int32_t> bad_table = {0, 7};
  BatchContext b;
  b.seqs.push_back(SeqSlice{0, 2, 6, bad_table, false});
  EXPECT_THROW(drafter->draft(std::span(&anchor, 1), b, pool, 0, logits), Error);  // block outside the pool
}

}  // namespace
}  // namespace flashdraft::model
