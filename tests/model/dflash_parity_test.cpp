// The shipped drafters (models/drafter-full, models/drafter-swa) against the
// Python reference (tools/reference/make_fixtures.py -> tests/fixtures/dflash/,
// float64 from the stored bf16 weights): drafter logits for the fixture's
// context and block, from the reference's taps and from our own target's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/dflash_drafter.h"
#include "model/qwen3_model.h"
#include "ops/ops.h"

namespace flashdraft::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kModels = fs::path(FD_SOURCE_DIR) / "models";
const fs::path kFixture = fs::path(FD_FIXTURES_DIR) / "dflash";

struct Fixture {
  json meta;
  std::vector<float> blob;
  std::vector<float> array(const json& entry, std::vector<int64_t>* shape = nullptr) const {
    const auto sh = entry.at("shape").get<std::vector<int64_t>>();
    size_t n = 1;
    for (int64_t d : sh) n *= static_cast<size_t>(d);
    const auto off = entry.at("offset").get<size_t>();
    if (off + n > blob.size()) throw std::runtime_error("reference.bin is shorter than reference.json says");
    if (shape) *shape = sh;
    return std::vector<float>(blob.begin() + static_cast<std::ptrdiff_t>(off),
                              blob.begin() + static_cast<std::ptrdiff_t>(off + n));
  }
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    std::ifstream js(kFixture / "reference.json");
    x.meta = json::parse(js);
    std::ifstream bin(kFixture / "reference.bin", std::ios::binary | std::ios::ate);
    x.blob.resize(static_cast<size_t>(bin.tellg()) / sizeof(float));
    bin.seekg(0);
    bin.read(reinterpret_cast<char*>(x.blob.data()), static_cast<std::streamsize>(x.blob.size() * sizeof(float)));
    return x;
  }();
  return f;
}

Qwen3Model& target() {
  static auto* t = [] {
    const auto dir = kModels / "target";
    return Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir)).release();
  }();
  return *t;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

std::vector<int32_t> argmax_rows(const std::vector<float>& logits, int64_t vocab) {
  std::vector<int32_t> out;
  for (size_t r = 0; r * vocab < logits.size(); ++r)
    out.push_back(static_cast<int32_t>(ops::cpu::argmax(logits.data() + r * vocab, vocab)));
  return out;
}

class DFlashParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(fs::exists(kFixture / "reference.json")) << kFixture << " is missing"; }
};

TEST_P(DFlashParity, LogitsFromReferenceTaps) {
  const auto& f = fixture();
  const json& d = f.meta.at("drafter");
  const json& want_meta = d.at(GetParam());
  auto drafter = DFlashDrafter::load(kModels / GetParam(), target());
  std::vector<int64_t> tshape;
  const auto taps = f.array(d.at("taps"), &tshape);
  const int64_t S = d.at("p0").get<int64_t>();
  ASSERT_EQ(tshape[0], S);
  ASSERT_EQ(tshape[1], drafter->config().num_taps() * target().config().hidden_size);
  const auto block = want_meta.at("block_ids").get<std::vector<int32_t>>();
  ASSERT_EQ(static_cast<int64_t>(block.size()), drafter->config().block_size);
  ASSERT_EQ(block[1], drafter->config().mask_token_id);
  // The context reaches past the sliding window, so the window is exercised.
  for (const auto& k : drafter->config().layers)
    if (k.sliding) {
      ASSERT_GT(S, k.window);
    }

  std::vector<float> got;
  drafter->draft_contiguous(taps.data(), S, block[0], static_cast<int64_t>(block.size()), got);
  const auto want = f.array(want_meta.at("logits"));
  ASSERT_EQ(got.size(), want.size());
  const double err = rel_l2(got, want);
  EXPECT_LT(err, 1e-4);
  std::printf("%s: drafter logits rel L2 vs reference %.3g\n", GetParam().c_str(), err);
  const int64_t V = target().config().vocab_size;
  EXPECT_EQ(argmax_rows(got, V), want_meta.at("drafts").get<std::vector<int32_t>>())
      << "reference min top-2 margin " << want_meta.at("min_top2_margin");
}

// End to end: our target's taps of the context ids feed our drafter. With
// the tap ids shifted by one layer the logits no longer match (taps are live).
TEST_P(DFlashParity, LogitsFromOurTargetsTaps) {
  const auto& f = fixture();
  const json& d = f.meta.at("drafter");
  auto drafter = DFlashDrafter::load(kModels / GetParam(), target());
  const auto ids = d.at("context_ids").get<std::vector<int32_t>>();
  const auto want = f.array(d.at(GetParam()).at("logits"));
  const auto block = d.at(GetParam()).at("block_ids").get<std::vector<int32_t>>();

  const auto drafter_logits = [&](std::vector<int64_t> tap_ids) {
    target().set_tap_layers(std::move(tap_ids));
    auto cache = target().new_cache();
    std::vector<float> logits, out;
    target().forward(ids, cache, logits);
    EXPECT_EQ(ops::cpu::argmax(logits.data(), target().config().vocab_size), d.at("anchor").get<int64_t>());
    const std::vector<float> taps = target().taps();
    drafter->draft_contiguous(taps.data(), static_cast<int64_t>(ids.size()), block[0],
                              static_cast<int64_t>(block.size()), out);
    return out;
  };
  const auto& tap_ids = drafter->config().target_layer_ids;
  const double err = rel_l2(drafter_logits(tap_ids), want);
  EXPECT_LT(err, 1e-4);

  std::vector<int64_t> shifted;
  for (int64_t t : tap_ids) shifted.push_back(t + 1 < target().config().num_hidden_layers ? t + 1 : t - 1);
  const double shifted_err = rel_l2(drafter_logits(shifted), want);
  EXPECT_GT(shifted_err, 1e-2);
  std::printf("%s: from our target's taps rel L2 %.3g; taps shifted by one layer %.3g\n", GetParam().c_str(), err,
              shifted_err);
  target().set_tap_layers({});
}

INSTANTIATE_TEST_SUITE_P(Shipped, DFlashParity, ::testing::Values("drafter-full", "drafter-swa"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "drafter-full" ? std::string("Full") : std::string("Swa");
                         });

}  // namespace
}  // namespace flashdraft::model
