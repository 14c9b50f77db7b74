// DFlash drafter config.json: fields, defaults, layer kinds, and one clear
// error per check, against the tiny-qwen3 target (3 layers, hidden 64, vocab 512).
#include "model/dflash_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "dflash_test_drafter.h"
#include "io/model_config.h"
#include "reference_data.h"

namespace flashdraft::model {
namespace {

using nlohmann::json;

class DFlashConfigTest : public ::testing::Test {
 protected:
  io::ModelConfig target_ = io::load_model_config(testing::fixture("tiny-qwen3"));
  testing::ScratchDir scratch_;
  int count_ = 0;

  // Goes through the files, as the engine does.
  DFlashConfig parse(const json& c) {
    const auto dir = scratch_.path() / ("drafter" + std::to_string(count_++));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json") << c.dump(2);
    return parse_dflash_config(load_drafter_model_config(dir), target_, dir);
  }
  // The message of the error parse() throws, or "no error".
  std::string error_of(const std::function<void(json&)>& edit) {
    json c = testing::tiny_drafter_config();
    edit(c);
    try {
      parse(c);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  void expect_error(const std::function<void(json&)>& edit, const std::string& field, const std::string& detail) {
    const std::string e = error_of(edit);
    EXPECT_NE(e.find("drafter" + std::to_string(count_ - 1) + "/config.json"), std::string::npos) << e;
    EXPECT_NE(e.find(field), std::string::npos) << "want field " << field << " in: " << e;
    EXPECT_NE(e.find(detail), std::string::npos) << "want '" << detail << "' in: " << e;
  }
};

TEST_F(DFlashConfigTest, ReadsEveryField) {
  json c = testing::tiny_drafter_config();
  c["final_logit_softcapping"] = 30.0;
  c["input_embedding_scale"] = 8.0;
  const auto d = parse(c);
  EXPECT_EQ(d.block_size, 8);
  EXPECT_EQ(d.num_target_layers, 3);
  EXPECT_EQ(d.target_layer_ids, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(d.num_taps(), 2);
  EXPECT_EQ(d.mask_token_id, 500);
  ASSERT_EQ(d.layers.size(), 2u);
  EXPECT_TRUE(d.layers[0].sliding);
  EXPECT_EQ(d.layers[0].window, 4);
  EXPECT_TRUE(d.layers[0].causal);
  EXPECT_FALSE(d.layers[1].sliding);
  EXPECT_FALSE(d.layers[1].causal);  // full layers are bidirectional inside the block
  EXPECT_EQ(d.final_logit_softcapping, 30.0);
  EXPECT_EQ(d.input_embedding_scale, 8.0);
  EXPECT_EQ(d.model.hidden_size, 64);
  EXPECT_EQ(d.model.num_hidden_layers, 2);
}

TEST_F(DFlashConfigTest, ShippedLayoutWithSlidingWindowFlag) {
  // io alone refuses use_sliding_window (a plain decoder would ignore the
  // window); the drafter's reader accepts it and honours the window.
  const auto dir = scratch_.path() / "swa";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << testing::tiny_drafter_config().dump();
  EXPECT_THROW(io::load_model_config(dir), Error);
  const auto cfg = load_drafter_model_config(dir);
  EXPECT_TRUE(cfg.raw["use_sliding_window"].get<bool>());
  EXPECT_TRUE(parse_dflash_config(cfg, target_, dir).layers[0].sliding);
}

TEST_F(DFlashConfigTest, KindsFromCausalFlags) {
  json c = testing::tiny_drafter_config();
  c["layer_types"] = {"full_attention", "full_attention"};
  c["dflash_config"]["causal"] = true;
  auto d = parse(c);
  EXPECT_TRUE(d.layers[0].causal && d.layers[1].causal);
  EXPECT_FALSE(d.layers[0].sliding || d.layers[1].sliding);

  c["dflash_config"].erase("causal");
  c["is_causal"] = true;
  d = parse(c);
  EXPECT_TRUE(d.layers[0].causal && d.layers[1].causal);
  c["is_causal"] = false;
  d = parse(c);
  EXPECT_FALSE(d.layers[0].causal || d.layers[1].causal);
}

TEST_F(DFlashConfigTest, UseSwaWindowsEveryLayer) {
  json c = testing::tiny_drafter_config();
  c["layer_types"] = {"full_attention", "full_attention"};
  c["dflash_config"]["use_swa"] = true;
  c["dflash_config"]["swa_window_size"] = 6;
  const auto d = parse(c);
  for (const auto& k : d.layers) {
    EXPECT_TRUE(k.sliding);
    EXPECT_EQ(k.window, 6);
    EXPECT_TRUE(k.causal);
  }
}

TEST_F(DFlashConfigTest, LayerTypesFromMaxWindowLayersWhenAbsent) {
  json c = testing::tiny_drafter_config();
  c.erase("layer_types");
  c["max_window_layers"] = 1;  // transformers' Qwen3: layers >= max_window_layers slide
  auto d = parse(c);
  EXPECT_FALSE(d.layers[0].sliding);
  EXPECT_TRUE(d.layers[1].sliding);
  c["use_sliding_window"] = false;
  d = parse(c);
  EXPECT_FALSE(d.layers[0].sliding || d.layers[1].sliding);
}

TEST_F(DFlashConfigTest, DefaultTapsFollowZLabsRule) {
  EXPECT_EQ(default_target_layer_ids(36, 5), (std::vector<int64_t>{1, 9, 17, 25, 33}));  // DFLASH.md's example
  EXPECT_EQ(default_target_layer_ids(36, 1), (std::vector<int64_t>{18}));
  // Python's round() sends halves to the even neighbour: 1 + 3/2 = 2.5 -> 2, not 3.
  EXPECT_EQ(default_target_layer_ids(7, 3), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(default_target_layer_ids(6, 5), (std::vector<int64_t>{1, 2, 2, 2, 3}));  // 1.5 -> 2, 2.5 -> 2
  EXPECT_EQ(default_target_layer_ids(28, 3), (std::vector<int64_t>{1, 13, 25}));

  json c = testing::tiny_drafter_config();
  c["dflash_config"].erase("target_layer_ids");
  c["num_target_layers"] = 3;
  // N = 3, L = 2: 1 + i * (-1) / 1 -> [1, 0].
  EXPECT_EQ(parse(c).target_layer_ids, (std::vector<int64_t>{1, 0}));
}

TEST_F(DFlashConfigTest, EachCheckFailsClearly) {
  expect_error([](json& c) { c["block_size"] = 1; }, "block_size", ">= 2");
  expect_error([](json& c) { c.erase("block_size"); }, "block_size", "missing");
  expect_error([](json& c) { c["dflash_config"]["block_size"] = 4; }, "block_size", "disagrees");
  expect_error(
      [](json& c) {
        c["dflash_config"]["target_layer_ids"] = {0, 3};
      },
      "target_layer_ids", "target has layers 0..2");
  expect_error([](json& c) { c["dflash_config"]["target_layer_ids"] = {-1, 2}; }, "target_layer_ids", "layer -1");
  expect_error([](json& c) { c["dflash_config"]["target_layer_ids"] = json::array(); }, "target_layer_ids",
               "at least one");
  expect_error([](json& c) { c["dflash_config"]["target_layer_ids"] = "0,2"; }, "target_layer_ids", "list of integers");
  expect_error([](json& c) { c["num_target_layers"] = 36; }, "num_target_layers", "another target");
  expect_error([](json& c) { c["dflash_config"]["mask_token_id"] = 512; }, "mask_token_id",
               "outside the target's vocabulary [0, 512)");
  expect_error([](json& c) { c["dflash_config"].erase("mask_token_id"); }, "mask_token_id", "missing");
  expect_error([](json& c) { c["hidden_size"] = 32; }, "hidden_size", "target's 64");
  expect_error([](json& c) { c["num_key_value_heads"] = 3; }, "num_key_value_heads", "divisor");
  expect_error([](json& c) { c["head_dim"] = 15; }, "head_dim", "even");
  expect_error([](json& c) { c["attention_bias"] = true; }, "attention_bias", "expected false");
  expect_error([](json& c) { c["layer_types"] = {"full_attention"}; }, "layer_types", "one entry per drafter layer");
  expect_error(
      [](json& c) {
        c["layer_types"] = {"full_attention", "chunked_attention"};
      },
      "layer_types", "chunked_attention");
  expect_error([](json& c) { c["sliding_window"] = nullptr; }, "sliding_window", "layer 0 is sliding_attention");
  expect_error([](json& c) { c["sliding_window"] = 0; }, "sliding_window", "positive");
  expect_error([](json& c) { c["dflash_config"]["use_swa"] = true; }, "swa_window_size", "use_swa");
  expect_error(
      [](json& c) {
        c["dflash_config"]["use_swa"] = true;
        c["dflash_config"]["swa_window_size"] = 8;
      },
      "sliding_window", "disagrees with dflash_config.swa_window_size");
  expect_error(
      [](json& c) {
        c["dflash_config"]["causal"] = true;
        c["is_causal"] = false;
      },
      "is_causal", "disagrees");
  expect_error(
      [](json& c) {
        c.erase("layer_types");
        c.erase("max_window_layers");
      },
      "max_window_layers", "missing");
  expect_error([](json& c) { c["final_logit_softcapping"] = -1.0; }, "final_logit_softcapping", "positive");
  expect_error([](json& c) { c["input_embedding_scale"] = 0.0; }, "input_embedding_scale", "positive");
  expect_error([](json& c) { c["dflash_config"] = 5; }, "dflash_config", "object");
}

TEST_F(DFlashConfigTest, SoftcapZeroOrNullMeansNone) {
  json c = testing::tiny_drafter_config();
  c["final_logit_softcapping"] = 0.0;
  EXPECT_FALSE(parse(c).final_logit_softcapping.has_value());
  c["final_logit_softcapping"] = nullptr;
  EXPECT_FALSE(parse(c).final_logit_softcapping.has_value());
}

}  // namespace
}  // namespace flashdraft::model
