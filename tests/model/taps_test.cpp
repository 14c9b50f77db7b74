// Hidden-state taps (for DFlash) against the outputs of HF's decoder layers.
#include <gtest/gtest.h>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "ops/ops.h"
#include "reference_data.h"

namespace flashdraft::model {
namespace {

using testing::fixture;
using testing::rel_l2;

TEST(Taps, EachTapIsThatLayersOutputInListOrder) {
  const auto dir = fixture("tiny-qwen3");
  auto model = Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir));
  const auto ref = testing::load_reference(dir);
  const testing::RefPrompt* p = nullptr;
  for (const auto& candidate : ref.prompts)
    if (!candidate.layer_outputs.empty()) p = &candidate;
  ASSERT_NE(p, nullptr);
  const int64_t H = model->config().hidden_size, n = static_cast<int64_t>(p->ids.size());
  ASSERT_EQ(p->layer_outputs.size(), 3u);

  const std::vector<int64_t> taps = {2, 0, 1};  // deliberately not sorted
  model->set_tap_layers(taps);
  auto cache = model->new_cache();
  std::vector<float> logits;
  // Two chunks: taps cover only the rows of the latest forward.
  const int64_t split = 15;
  std::vector<float> got;
  for (auto [s, len] : {std::pair<int64_t, int64_t>{0, split}, {split, n - split}}) {
    model->forward(std::span(p->ids).subspan(s, len), cache, logits);
    const auto chunk = model->taps();
    ASSERT_EQ(chunk.size(), static_cast<size_t>(len * 3 * H));
    got.insert(got.end(), chunk.begin(), chunk.end());
  }
  for (size_t t = 0; t < taps.size(); ++t) {
    std::vector<float> column(n * H);
    for (int64_t r = 0; r < n; ++r)
      std::copy(got.begin() + (r * 3 + t) * H, got.begin() + (r * 3 + t + 1) * H, column.begin() + r * H);
    const auto& want = p->layer_outputs[taps[t]].data;
    EXPECT_LT(rel_l2(column.data(), want.data(), want.size()), 1e-5) << "tap " << t << " = layer " << taps[t];
  }
}

TEST(Taps, RejectsLayersThatDoNotExist) {
  const auto dir = fixture("tiny-qwen3");
  auto model = Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir));
  EXPECT_THROW(model->set_tap_layers({0, 3}), Error);
  EXPECT_THROW(model->set_tap_layers({-1}), Error);
  model->set_tap_layers({});
  auto cache = model->new_cache();
  std::vector<float> logits;
  const int32_t ids[] = {5, 6};
  model->forward(ids, cache, logits);
  EXPECT_TRUE(model->taps().empty());
}

TEST(Rope, InvFreqIsBitIdenticalToHuggingFace) {
  for (const char* name : {"tiny-qwen3", "tiny-llama"}) {
    const auto dir = fixture(name);
    const auto cfg = io::load_model_config(dir);
    const auto ref = testing::load_reference(dir);
    std::vector<float> inv(cfg.head_dim / 2);
    ops::cpu::rope_inv_freq(cfg.rope_theta, cfg.head_dim, inv.data());
    EXPECT_EQ(inv, ref.inv_freq) << name;
  }
}

}  // namespace
}  // namespace flashdraft::model
