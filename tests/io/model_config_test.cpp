#include "io/model_config.h"

#include <gtest/gtest.h>

#include "expect_error.h"
#include "safetensors_writer.h"

namespace flashdraft::io {
namespace {

using nlohmann::json;
using testing::expect_error;

// Qwen3-0.6B's config.json as published (transformers 4.51).
const char* kQwen3 = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// A TinyLlama-style config: no head_dim (derived), eos as a list.
const char* kLlama = R"({
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": [2, 32000],
  "hidden_act": "silu",
  "hidden_size": 2048,
  "intermediate_size": 5632,
  "max_position_embeddings": 2048,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 22,
  "num_key_value_heads": 4,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "float32",
  "vocab_size": 32000
})";

ModelConfig parse(const json& j) { return parse_model_config(j.dump(), "test/config.json"); }

TEST(ModelConfig, Qwen3) {
  const ModelConfig c = parse_model_config(kQwen3, "qwen3/config.json");
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"Qwen3ForCausalLM"});
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_EQ(c.hidden_size, 1024);
  EXPECT_EQ(c.intermediate_size, 3072);
  EXPECT_EQ(c.num_hidden_layers, 28);
  EXPECT_EQ(c.num_attention_heads, 16);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 128);  // explicit, not hidden/heads (= 64)
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.max_position_embeddings, 40960);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_EQ(c.raw["max_window_layers"], 28);
}

TEST(ModelConfig, Llama) {
  const ModelConfig c = parse_model_config(kLlama, "llama/config.json");
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 64);  // 2048 / 32
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2, 32000}));
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.torch_dtype, "float32");
}

TEST(ModelConfig, TransformersV5Layout) {
  json j = json::parse(kQwen3);
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j.erase("torch_dtype");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 5000000}};
  j["dtype"] = "bfloat16";
  const ModelConfig c = parse(j);
  EXPECT_DOUBLE_EQ(c.rope_theta, 5e6);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
}

TEST(ModelConfig, Defaults) {
  json j = json::parse(kLlama);
  for (const char* key : {"num_key_value_heads", "hidden_act", "tie_word_embeddings",
                          "bos_token_id", "eos_token_id", "torch_dtype", "architectures"}) {
    j.erase(key);
  }
  const ModelConfig c = parse(j);
  EXPECT_EQ(c.num_key_value_heads, 32);
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_TRUE(c.eos_token_ids.empty());
  EXPECT_EQ(c.torch_dtype, "");
}

TEST(ModelConfig, LoadsFromDirectory) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "config.json", kQwen3);
  EXPECT_EQ(load_model_config(dir.path()).num_hidden_layers, 28);
}

TEST(ModelConfig, MissingFileNamesPath) {
  testing::TempDir dir;
  expect_error([&] { load_model_config(dir.path()); },
               {(dir.path() / "config.json").string(), "cannot open"});
}

TEST(ModelConfig, MissingRequiredFieldNamesFieldAndFile) {
  for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                          "num_attention_heads", "rms_norm_eps", "max_position_embeddings",
                          "rope_theta", "model_type"}) {
    json j = json::parse(kQwen3);
    j.erase(key);
    expect_error([&] { parse(j); },
                 {"test/config.json", std::string("field \"") + key + "\"", "missing"});
  }
}

TEST(ModelConfig, WrongTypes) {
  json j = json::parse(kQwen3);
  j["hidden_size"] = "1024";
  expect_error([&] { parse(j); }, {"test/config.json", "\"hidden_size\"", "expected an integer", "\"1024\""});
  j = json::parse(kQwen3);
  j["num_hidden_layers"] = 28.5;
  expect_error([&] { parse(j); }, {"\"num_hidden_layers\"", "expected an integer"});
  j = json::parse(kQwen3);
  j["tie_word_embeddings"] = 1;
  expect_error([&] { parse(j); }, {"\"tie_word_embeddings\"", "expected true or false"});
  j = json::parse(kQwen3);
  j["eos_token_id"] = {1, "two"};
  expect_error([&] { parse(j); }, {"\"eos_token_id\"", "list of integers"});
  j = json::parse(kQwen3);
  j["num_attention_heads"] = 0;
  expect_error([&] { parse(j); }, {"\"num_attention_heads\"", "positive integer", "found 0"});
}

TEST(ModelConfig, UnsupportedFeaturesAreRefused) {
  json j = json::parse(kQwen3);
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 4.0}};
  expect_error([&] { parse(j); }, {"test/config.json", "\"rope_scaling.rope_type\"", "not supported", "dynamic"});
  j = json::parse(kQwen3);
  j["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 1000000}};
  expect_error([&] { parse(j); }, {"\"rope_parameters.rope_type\"", "\"longrope\""});
  j = json::parse(kQwen3);
  j["hidden_act"] = "gelu";
  expect_error([&] { parse(j); }, {"\"hidden_act\"", "\"silu\"", "\"gelu\""});
  j = json::parse(kQwen3);
  j["model_type"] = "qwen2";
  expect_error([&] { parse(j); }, {"\"model_type\"", "\"qwen2\"", "\"qwen3\" or \"llama\""});
  j = json::parse(kQwen3);
  j["use_sliding_window"] = true;
  expect_error([&] { parse(j); }, {"\"use_sliding_window\""});
  j = json::parse(kLlama);
  j["mlp_bias"] = true;
  expect_error([&] { parse(j); }, {"\"mlp_bias\""});
}

TEST(ModelConfig, InconsistentHeads) {
  json j = json::parse(kQwen3);
  j["num_key_value_heads"] = 3;
  expect_error([&] { parse(j); }, {"\"num_key_value_heads\"", "divisor of num_attention_heads (16)", "3"});
  j = json::parse(kLlama);
  j["num_attention_heads"] = 30;  // 2048 / 30 is not whole and head_dim is absent
  j["num_key_value_heads"] = 5;
  expect_error([&] { parse(j); }, {"\"head_dim\"", "missing", "not a multiple"});
}

// Models flashdraft cannot run are refused with one line naming the field.
TEST(ModelConfig, UnsupportedArchitecturesAndLayerKindsAreRefused) {
  json j = json::parse(kQwen3);
  j["architectures"] = {"Qwen3MoeForCausalLM"};
  expect_error([&] { parse(j); }, {"\"architectures\"", "unsupported architecture \"Qwen3MoeForCausalLM\""});
  j["architectures"] = {"LlamaForCausalLM"};
  expect_error([&] { parse(j); }, {"\"architectures\"", "does not go with model_type \"qwen3\""});
  j["architectures"] = {"DFlashDraftModel"};
  expect_error([&] { parse(j); }, {"\"architectures\"", "DFlash drafter", "--draft-model"});
  j.erase("architectures");
  EXPECT_EQ(parse(j).model_type, "qwen3");  // absent: model_type decides, as in transformers

  // A hybrid target in the layout Qwen3.5 publishes (text model under text_config).
  const json hybrid = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                       {"model_type", "qwen3_5"},
                       {"text_config",
                        {{"model_type", "qwen3_5_text"},
                         {"layer_types", {"linear_attention", "linear_attention", "linear_attention", "full_attention"}},
                         {"full_attention_interval", 4}}}};
  expect_error([&] { parse(hybrid); },
               {"\"text_config.layer_types\"", "entry 0 is \"linear_attention\"", "hybrid linear-attention"});
  json next = json::parse(kQwen3);  // Qwen3-Next keeps the fields at the top level
  next["full_attention_interval"] = 4;
  expect_error([&] { parse(next); }, {"\"full_attention_interval\"", "is set (4)", "hybrid"});
  j = json::parse(kQwen3);
  j["layer_types"] = {"full_attention", "sliding_attention"};
  expect_error([&] { parse(j); }, {"\"layer_types\"", "entry 1 is \"sliding_attention\"", "full_attention"});
  j["layer_types"] = json(std::vector<std::string>(28, "full_attention"));
  EXPECT_EQ(parse(j).num_hidden_layers, 28);
}

TEST(ModelConfig, BadJsonNamesFile) {
  expect_error([&] { parse_model_config("{\"a\": }", "x/config.json"); },
               {"x/config.json", "invalid JSON"});
  expect_error([&] { parse_model_config("[]", "x/config.json"); },
               {"x/config.json", "expected a JSON object"});
}

}  // namespace
}  // namespace flashdraft::io
