// Qwen3Model::forward_batch against the per-request contiguous forward (which
// the parity tests tie to Hugging Face): mixed batches of prefill chunks,
// verify rows and decode rows over shuffled block tables must give the same
// logits and taps, and stale K/V past a request's rows must never leak in.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "paged_rig.h"
#include "reference_data.h"

namespace flashdraft::model {
namespace {

using testing::fixture;
using testing::make_step;
using testing::PagedRig;
using testing::Part;
using testing::rel_l2;
using testing::Step;

constexpr double kTol = 1e-5;  // same math, different GEMM shapes and summation order

struct Expected {
  std::vector<float> logits;  // [len, vocab]
  std::vector<float> taps;    // [len, K * hidden]
};

class PagedForward : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const auto dir = fixture(GetParam());
    model_ = Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir));
    const int64_t L = model_->config().num_hidden_layers;
    model_->set_tap_layers({L - 1, 0});  // not sorted, last layer included
    vocab_ = model_->config().vocab_size;
    tap_width_ = 2 * model_->config().hidden_size;
  }

  std::vector<int32_t> random_ids(int64_t n, uint32_t seed) const {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(vocab_ - 1));
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids) id = d(gen);
    return ids;
  }

  // The whole sequence in one contiguous forward with every row's logits.
  Expected reference(const std::vector<int32_t>& ids) {
    auto cache = model_->new_cache();
    Expected e;
    model_->forward(ids, cache, e.logits, /*all_logits=*/true);
    e.taps = model_->taps();
    return e;
  }

  // Runs one step and checks its logits and taps, request by request.
  void run_and_check(PagedRig& rig, const std::vector<std::vector<int32_t>>& seqs, const std::vector<Expected>& want,
                     const std::vector<Part>& parts) {
    const auto step = make_step(rig, seqs, parts);
    std::vector<float> logits;
    model_->forward_batch(step.tokens, step.batch, rig.pool, logits);
    ASSERT_EQ(logits.size(), static_cast<size_t>(step.batch.logit_rows() * vocab_));
    ASSERT_EQ(model_->taps().size(), step.tokens.size() * static_cast<size_t>(tap_width_));
    int64_t out_row = 0, row = 0;
    for (const Part& p : parts) {
      const Expected& e = want[p.req];
      const int64_t rows = p.all_logits ? p.n_rows : 1, first = p.pos0 + p.n_rows - rows;
      const std::string what =
          "request " + std::to_string(p.req) + " at " + std::to_string(p.pos0) + "+" + std::to_string(p.n_rows);
      EXPECT_LT(rel_l2(logits.data() + out_row * vocab_, e.logits.data() + first * vocab_,
                       static_cast<size_t>(rows * vocab_)),
                kTol)
          << what;
      EXPECT_LT(rel_l2(model_->taps().data() + row * tap_width_, e.taps.data() + p.pos0 * tap_width_,
                       static_cast<size_t>(p.n_rows * tap_width_)),
                kTol)
          << what << " (taps)";
      out_row += rows;
      row += p.n_rows;
    }
  }

  PagedRig rig(int64_t num_blocks, int64_t block_size) const {
    return PagedRig(model_->backend(), num_blocks, block_size, model_->kv_layers());
  }

  std::unique_ptr<Qwen3Model> model_;
  int64_t vocab_ = 0, tap_width_ = 0;
};

TEST_P(PagedForward, MixedBatchesMatchPerRequestForward) {
  const std::vector<std::vector<int32_t>> seqs = {random_ids(37, 1), random_ids(27, 2), random_ids(12, 3),
                                                  random_ids(45, 4)};
  std::vector<Expected> want;
  for (const auto& s : seqs) want.push_back(reference(s));
  for (int64_t block_size : {4, 1, 16}) {
    SCOPED_TRACE("block size " + std::to_string(block_size));
    auto r = rig(160 / block_size + 8, block_size);
    // Every position of every request runs exactly once, in order; each step
    // mixes prefill chunks (last logits), verify rows and decode rows (all logits).
    run_and_check(r, seqs, want, {{0, 0, 16, false}, {1, 0, 20, false}, {2, 0, 11, false}});
    run_and_check(r, seqs, want, {{2, 11, 1, true}, {0, 16, 16, false}, {1, 20, 5, true}, {3, 0, 13, false}});
    run_and_check(r, seqs, want, {{1, 25, 2, true}, {3, 13, 32, true}, {0, 32, 5, true}});
  }
}

TEST_P(PagedForward, DecodeRowsOfManyRequestsInOneBatch) {
  std::vector<std::vector<int32_t>> seqs;
  std::vector<Expected> want;
  for (uint32_t i = 0; i < 6; ++i) {
    seqs.push_back(random_ids(9 + 3 * i, 10 + i));
    want.push_back(reference(seqs.back()));
  }
  auto r = rig(64, 4);
  std::vector<Part> prefill;
  for (size_t i = 0; i < seqs.size(); ++i) prefill.push_back({i, 0, static_cast<int64_t>(seqs[i].size()) - 3, false});
  run_and_check(r, seqs, want, prefill);
  for (int64_t k = 3; k > 0; --k) {
    std::vector<Part> decode;
    for (size_t i = seqs.size(); i-- > 0;)  // reverse order: batch order need not follow admission
      decode.push_back({i, static_cast<int64_t>(seqs[i].size()) - k, 1, i % 2 == 0});
    run_and_check(r, seqs, want, decode);
  }
}

TEST_P(PagedForward, RejectedVerifyRowsAreOverwrittenAndNeverLeak) {
  // Request 0 verifies garbage drafts at positions 11..15; after rejecting
  // them it goes on with its true tokens, and the stale K/V it left at
  // positions it has not re-run yet must not change any result.
  const auto truth = random_ids(30, 5);
  auto drafted = truth;
  const auto junk = random_ids(5, 6);
  std::copy(junk.begin(), junk.end(), drafted.begin() + 11);
  const auto other = random_ids(20, 7);
  const std::vector<Expected> want = {reference(truth), reference(other)};
  const std::vector<Expected> want_drafted = {reference(drafted), want[1]};
  auto r = rig(32, 4);

  run_and_check(r, {truth, other}, want, {{0, 0, 10, false}, {1, 0, 6, false}});
  // drafted[0..11) == truth[0..11): the verify rows are what the drafted sequence gives.
  run_and_check(r, {drafted, other}, want_drafted, {{1, 6, 1, true}, {0, 10, 6, true}});
  run_and_check(r, {truth, other}, want, {{0, 11, 1, true}, {1, 7, 3, true}});
  run_and_check(r, {truth, other}, want, {{0, 12, 2, true}});
  run_and_check(r, {truth, other}, want, {{1, 10, 10, true}, {0, 14, 16, true}});
}

TEST_P(PagedForward, MatchesHuggingFaceLogits) {
  const auto ref = testing::load_reference(fixture(GetParam()));
  std::vector<std::vector<int32_t>> seqs;
  for (const auto& p : ref.prompts) seqs.push_back(p.ids);
  // All prompts in one batch, then the same prompts fed 7 rows per step.
  for (int64_t chunk : {int64_t{1} << 20, int64_t{7}}) {
    auto r = rig(256, 4);
    std::vector<std::vector<float>> got(seqs.size());
    for (int64_t pos = 0;; pos += chunk) {
      std::vector<Part> parts;
      for (size_t i = 0; i < seqs.size(); ++i) {
        const int64_t len = static_cast<int64_t>(seqs[i].size());
        if (pos < len) parts.push_back({i, pos, std::min(chunk, len - pos), true});
      }
      if (parts.empty()) break;
      const auto step = make_step(r, seqs, parts);
      std::vector<float> logits;
      model_->forward_batch(step.tokens, step.batch, r.pool, logits);
      int64_t row = 0;
      for (const Part& p : parts) {
        got[p.req].insert(got[p.req].end(), logits.begin() + row * vocab_, logits.begin() + (row + p.n_rows) * vocab_);
        row += p.n_rows;
      }
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
      const auto& want = ref.prompts[i].logits.data;
      ASSERT_EQ(got[i].size(), want.size());
      EXPECT_LT(rel_l2(got[i].data(), want.data(), want.size()), 1e-4)
          << seqs[i].size() << "-token prompt, chunks of " << chunk;
    }
  }
}

TEST_P(PagedForward, LmHeadOfTheNormedLastLayerIsTheLogits) {
  // lm_head applies no norm: fed the final-normed output of the last layer
  // (tap L-1) it must reproduce forward's logits, tied head or not.
  const auto dir = fixture(GetParam());
  const auto& cfg = model_->config();
  const auto norm = io::Checkpoint::open(dir).load_f32("model.norm.weight", std::vector<int64_t>{cfg.hidden_size});
  const auto ids = random_ids(5, 8);
  const auto e = reference(ids);
  const int64_t H = cfg.hidden_size;
  std::vector<float> x(5 * H), logits(5 * vocab_);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t i = 0; i < H; ++i) {
      double ss = 0;
      for (int64_t j = 0; j < H; ++j) ss += std::pow(static_cast<double>(e.taps[r * tap_width_ + j]), 2);
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(H) + cfg.rms_norm_eps);
      x[r * H + i] = static_cast<float>(norm[i] * e.taps[r * tap_width_ + i] * inv);
    }
  model_->lm_head(x.data(), 5, logits.data());
  EXPECT_LT(rel_l2(logits.data(), e.logits.data(), logits.size()), 1e-5);
  // Unnormed input gives different logits: the head really does no norm.
  model_->lm_head(e.taps.data(), 1, logits.data());
  EXPECT_GT(rel_l2(logits.data(), e.logits.data(), static_cast<size_t>(vocab_)), 1e-3);
}

TEST_P(PagedForward, EmbedAndKvLayersDescribeTheModel) {
  const auto& cfg = model_->config();
  const auto layers = model_->kv_layers();
  ASSERT_EQ(static_cast<int64_t>(layers.size()), cfg.num_hidden_layers);
  for (const auto& s : layers) {
    EXPECT_EQ(s.kv_heads, cfg.num_key_value_heads);
    EXPECT_EQ(s.head_dim, cfg.head_dim);
  }
  const auto emb = io::Checkpoint::open(fixture(GetParam()))
                       .load_f32("model.embed_tokens.weight", std::vector<int64_t>{vocab_, cfg.hidden_size});
  const std::vector<int32_t> ids = {3, 0, static_cast<int32_t>(vocab_ - 1), 3};
  std::vector<float> out(ids.size() * cfg.hidden_size);
  model_->embed(ids, out.data());
  for (size_t r = 0; r < ids.size(); ++r)
    EXPECT_TRUE(std::equal(out.begin() + r * cfg.hidden_size, out.begin() + (r + 1) * cfg.hidden_size,
                           emb.begin() + ids[r] * cfg.hidden_size));
  const std::vector<int32_t> bad = {static_cast<int32_t>(vocab_)};
  EXPECT_THROW(model_->embed(bad, out.data()), Error);
}

TEST_P(PagedForward, BadMetadataIsAnErrorAndWritesNothing) {
  auto r = rig(8, 4);
  const std::vector<std::vector<int32_t>> seqs = {random_ids(10, 9), random_ids(10, 10)};
  auto good = make_step(r, seqs, {{0, 0, 6, false}, {1, 0, 3, true}});
  std::vector<float> logits;
  const auto snapshot = [&] {
    std::vector<float> v(static_cast<size_t>(r.pool.k(0).numel()));
    model_->backend().download(r.pool.k(0), v.data());
    return v;
  };
  const auto before = snapshot();
  const auto expect_error = [&](const Step& s, KVPool& pool, const char* why) {
    EXPECT_THROW(model_->forward_batch(s.tokens, s.batch, pool, logits), Error) << why;
    const auto after = snapshot();
    EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0) << why;
  };
  Step s = good;
  s.tokens.pop_back();
  expect_error(s, r.pool, "fewer tokens than rows");
  s = good;
  s.batch.seqs[1].row_begin = 5;
  expect_error(s, r.pool, "rows overlap");
  s = good;
  s.batch.seqs[1].n_rows = 0;
  s.tokens.resize(6);
  expect_error(s, r.pool, "empty request");
  s = good;
  s.batch.seqs[0].pos0 = 3;  // table of 2 blocks covers 8 positions, not 9
  expect_error(s, r.pool, "table too short");
  s = good;
  const std::vector<int32_t> outside = {1, 8};
  s.batch.seqs[0].block_table = outside;
  expect_error(s, r.pool, "block id outside the pool");
  s = good;
  s.batch.seqs.clear();
  s.tokens.clear();
  expect_error(s, r.pool, "empty batch");
  s = good;
  s.tokens[2] = static_cast<int32_t>(vocab_);
  expect_error(s, r.pool, "token outside the vocabulary");

  auto shapes = model_->kv_layers();
  shapes.pop_back();
  KVPool too_few(model_->backend(), 8, 4, shapes);
  EXPECT_THROW(model_->forward_batch(good.tokens, good.batch, too_few, logits), Error);
  shapes = model_->kv_layers();
  shapes[0].head_dim *= 2;
  KVPool wrong(model_->backend(), 8, 4, shapes);
  EXPECT_THROW(model_->forward_batch(good.tokens, good.batch, wrong, logits), Error);
  // A pool with extra layers after the model's (the drafter's) is fine.
  shapes = model_->kv_layers();
  shapes.push_back({1, 8});
  KVPool shared(model_->backend(), 8, 4, shapes);
  EXPECT_NO_THROW(model_->forward_batch(good.tokens, good.batch, shared, logits));
}

INSTANTIATE_TEST_SUITE_P(TinyModels, PagedForward, ::testing::Values("tiny-qwen3", "tiny-llama"),
                         [](const auto& info) { return std::string(info.param) == "tiny-qwen3" ? "Qwen3" : "Llama"; });

}  // namespace
}  // namespace flashdraft::model
