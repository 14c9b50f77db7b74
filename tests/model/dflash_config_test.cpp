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
  expect_error([](json& c) { c["vocab_size"] = 600; }, "vocab_size", "another tokenizer");
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
  expect_error(
      [](json& c) {
        c["layer_types"] = {"full_attention", "full_attention"};
        c["sliding_window"] = nullptr;
        c["dflash_config"]["use_swa"] = true;
      },
      "swa_window_size", "use_swa");
  expect_error([](json& c) { c["dflash_config"]["swa_window_size"] = 0; }, "swa_window_size", "positive");
  expect_error([](json& c) { c["use_sliding_window"] = false; }, "sliding_window",
               "use_sliding_window false (transformers then drops the window)");
  expect_error([](json& c) { c["dflash_config"]["swa_window_size"] = 3; c["swa_window_size"] = 4; },
               "swa_window_size", "disagrees");
  expect_error([](json& c) { c["architectures"] = {"Qwen3ForCausalLM"}; }, "architectures", "is this the target?");
  expect_error([](json& c) { c["architectures"] = {"DFlash2DraftModel"}; }, "architectures",
               "\"DFlash2DraftModel\" is not a DFlash drafter");
  expect_error([](json& c) { c["final_logit_softcapping"] = -1.0; }, "final_logit_softcapping", "positive");
  expect_error([](json& c) { c["input_embedding_scale"] = 0.0; }, "input_embedding_scale", "positive");
  expect_error([](json& c) { c["dflash_config"] = 5; }, "dflash_config", "object");
}

// Layer kinds, one case per rule of dflash_config.h (vLLM's resolution),
// over the tiny drafter: layer_types [sliding, full], sliding_window 4,
// use_sliding_window true.
struct KindCase {
  const char* name;
  std::function<void(json&)> edit;
  std::vector<DFlashLayerAttention> want;
};

TEST_F(DFlashConfigTest, LayerKindsResolveAsVllmDoes) {
  const DFlashLayerAttention F{false, 0, false}, Fc{false, 0, true};
  const auto S = [](int64_t w, bool causal) { return DFlashLayerAttention{true, w, causal}; };
  const auto full_types = [](json& c) { c["layer_types"] = {"full_attention", "full_attention"}; };
  const std::vector<KindCase> cases = {
      {"layer_types as given: sliding causal, full bidirectional", [](json&) {}, {S(4, true), F}},
      {"is_causal false makes a sliding layer non-causal", [](json& c) { c["is_causal"] = false; },
       {S(4, false), F}},
      {"is_causal true makes a full layer causal", [](json& c) { c["is_causal"] = true; }, {S(4, true), Fc}},
      {"dflash_config.causal when is_causal is absent", [](json& c) { c["dflash_config"]["causal"] = false; },
       {S(4, false), F}},
      {"is_causal wins over dflash_config.causal",
       [](json& c) {
         c["is_causal"] = true;
         c["dflash_config"]["causal"] = false;
       },
       {S(4, true), Fc}},
      {"is_causal null counts as absent",
       [](json& c) {
         c["is_causal"] = nullptr;
         c["dflash_config"]["causal"] = true;
       },
       {S(4, true), Fc}},
      {"use_swa with a sliding entry leaves full layers full",
       [](json& c) {
         c["dflash_config"]["use_swa"] = true;
         c["dflash_config"]["swa_window_size"] = 6;
       },
       {S(6, true), F}},
      {"use_swa without sliding entries slides every layer",
       [&](json& c) {
         full_types(c);
         c["dflash_config"]["use_swa"] = true;
         c["dflash_config"]["swa_window_size"] = 6;
       },
       {S(6, true), S(6, true)}},
      {"use_swa with causal false: non-causal sliding layers",
       [&](json& c) {
         full_types(c);
         c["dflash_config"]["use_swa"] = true;
         c["dflash_config"]["swa_window_size"] = 6;
         c["dflash_config"]["causal"] = false;
       },
       {S(6, false), S(6, false)}},
      {"use_swa without swa_window_size takes sliding_window",
       [&](json& c) {
         full_types(c);
         c["dflash_config"]["use_swa"] = true;
       },
       {S(4, true), S(4, true)}},
      {"swa_window_size sets the window of sliding layers without use_swa",
       [](json& c) { c["dflash_config"]["swa_window_size"] = 6; }, {S(6, true), F}},
      {"swa_window_size without sliding_window or use_sliding_window",
       [](json& c) {
         c["sliding_window"] = nullptr;
         c["use_sliding_window"] = false;
         c["dflash_config"]["swa_window_size"] = 3;
       },
       {S(3, true), F}},
      {"top-level use_swa and swa_window_size",
       [&](json& c) {
         full_types(c);
         c["use_swa"] = true;
         c["swa_window_size"] = 5;
       },
       {S(5, true), S(5, true)}},
      {"dflash_config.use_swa false wins over a top-level true",
       [&](json& c) {
         full_types(c);
         c["use_swa"] = true;
         c["dflash_config"]["use_swa"] = false;
       },
       {F, F}},
      {"no layer_types: layers from max_window_layers on slide",
       [](json& c) {
         c.erase("layer_types");
         c["max_window_layers"] = 1;
       },
       {F, S(4, true)}},
      {"no layer_types: transformers' default max_window_layers (28)",
       [](json& c) {
         c.erase("layer_types");
         c.erase("max_window_layers");
       },
       {F, F}},
      {"no layer_types and use_sliding_window false: all full",
       [](json& c) {
         c.erase("layer_types");
         c["max_window_layers"] = 0;
         c["use_sliding_window"] = false;
       },
       {F, F}},
  };
  for (const KindCase& k : cases) {
    json c = testing::tiny_drafter_config();
    k.edit(c);
    const auto got = parse(c).layers;
    ASSERT_EQ(got.size(), k.want.size()) << k.name;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].sliding, k.want[i].sliding) << k.name << ", layer " << i;
      EXPECT_EQ(got[i].window, k.want[i].window) << k.name << ", layer " << i;
      EXPECT_EQ(got[i].causal, k.want[i].causal) << k.name << ", layer " << i;
    }
  }
}

TEST_F(DFlashConfigTest, BlockSizeInEitherPlace) {
  json c = testing::tiny_drafter_config();
  c.erase("block_size");
  c["dflash_config"]["block_size"] = 16;
  EXPECT_EQ(parse(c).block_size, 16);
  c["block_size"] = 16;  // both, agreeing
  EXPECT_EQ(parse(c).block_size, 16);
}

TEST_F(DFlashConfigTest, ReadsWithoutATarget) {
  json c = testing::tiny_drafter_config();
  const auto dir = scratch_.path() / "alone";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << c.dump();
  const auto d = read_dflash_config(load_drafter_model_config(dir), dir);
  EXPECT_EQ(d.num_target_layers, 3);
  EXPECT_EQ(d.target_layer_ids, (std::vector<int64_t>{0, 2}));
  EXPECT_FALSE(d.default_taps);
  // Without taps the config's num_target_layers gives z-lab's default; without that, nothing.
  c["dflash_config"].erase("target_layer_ids");
  std::ofstream(dir / "config.json") << c.dump();
  auto alone = read_dflash_config(load_drafter_model_config(dir), dir);
  EXPECT_TRUE(alone.default_taps);
  EXPECT_EQ(alone.target_layer_ids, default_target_layer_ids(3, 2));
  c.erase("num_target_layers");
  std::ofstream(dir / "config.json") << c.dump();
  alone = read_dflash_config(load_drafter_model_config(dir), dir);
  EXPECT_EQ(alone.num_target_layers, 0);
  EXPECT_TRUE(alone.target_layer_ids.empty());
}

TEST_F(DFlashConfigTest, EveryPairMismatchIsItsOwnLine) {
  json c = testing::tiny_drafter_config();
  c["hidden_size"] = 32;
  c["vocab_size"] = 1000;
  c["num_target_layers"] = 36;
  c["dflash_config"]["target_layer_ids"] = {0, 5};
  c["dflash_config"]["mask_token_id"] = 600;
  const auto dir = scratch_.path() / "mismatch";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << c.dump();
  const auto d = read_dflash_config(load_drafter_model_config(dir), dir);
  const auto problems = dflash_pair_problems(d, target_, dir);
  ASSERT_EQ(problems.size(), 5u);
  const char* fields[] = {"\"hidden_size\"", "\"vocab_size\"", "\"num_target_layers\"",
                          "\"dflash_config.target_layer_ids\"", "\"dflash_config.mask_token_id\""};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_NE(problems[i].find(fields[i]), std::string::npos) << problems[i];
    EXPECT_NE(problems[i].find("mismatch/config.json"), std::string::npos) << problems[i];
    EXPECT_EQ(problems[i].find('\n'), std::string::npos) << problems[i];
  }
  EXPECT_TRUE(dflash_pair_problems(parse(testing::tiny_drafter_config()), target_, dir).empty());
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
