#include "io/model_config.h"

#include <cmath>

#include "core/error.h"
#include "io/json_fields.h"
#include "io/json_text.h"

namespace flashdraft::io {

namespace {

using nlohmann::json;

int64_t positive_int(const JsonFields& f, const std::string& key) {
  int64_t v = f.required_int(key);
  if (v <= 0) f.fail(key, "expected a positive integer, found " + std::to_string(v));
  return v;
}

}  // namespace

ModelConfig parse_model_config(const std::string& text, const std::string& source) {
  ModelConfig c;
  c.raw = parse_json(text, source);
  const JsonFields f(c.raw, source);

  auto model_type = f.optional_string("model_type");
  if (!model_type) f.fail("model_type", "missing (required: \"qwen3\" or \"llama\")");
  c.model_type = *model_type;
  if (c.model_type == "qwen3") {
    c.qk_norm = true;
  } else if (c.model_type == "llama") {
    c.qk_norm = false;
  } else {
    f.fail("model_type", "unsupported model type \"" + c.model_type + "\" (expected \"qwen3\" or \"llama\")");
  }
  c.architectures = f.string_list("architectures");

  c.vocab_size = positive_int(f, "vocab_size");
  c.hidden_size = positive_int(f, "hidden_size");
  c.intermediate_size = positive_int(f, "intermediate_size");
  c.num_hidden_layers = positive_int(f, "num_hidden_layers");
  c.num_attention_heads = positive_int(f, "num_attention_heads");
  c.max_position_embeddings = positive_int(f, "max_position_embeddings");

  c.num_key_value_heads = f.has("num_key_value_heads") ? positive_int(f, "num_key_value_heads")
                                                       : c.num_attention_heads;
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    f.fail("num_key_value_heads", "expected a divisor of num_attention_heads (" +
                                      std::to_string(c.num_attention_heads) + "), found " +
                                      std::to_string(c.num_key_value_heads));
  }
  if (f.has("head_dim")) {
    c.head_dim = positive_int(f, "head_dim");
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      f.fail("head_dim", "missing, and hidden_size (" + std::to_string(c.hidden_size) +
                             ") is not a multiple of num_attention_heads (" +
                             std::to_string(c.num_attention_heads) + ") to derive it");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }

  c.rms_norm_eps = f.required_number("rms_norm_eps");
  if (!(c.rms_norm_eps > 0)) {
    f.fail("rms_norm_eps", "expected a positive number, found " + std::to_string(c.rms_norm_eps));
  }
  c.rope = read_rope_config(f, c.raw, c.max_position_embeddings);
  c.rope_theta = c.rope.theta;

  c.hidden_act = f.optional_string("hidden_act").value_or("silu");
  if (c.hidden_act != "silu") {
    f.fail("hidden_act", "only \"silu\" is supported, found \"" + c.hidden_act + "\"");
  }
  c.attention_bias = f.optional_bool("attention_bias").value_or(false);
  if (f.optional_bool("mlp_bias").value_or(false)) {
    f.fail("mlp_bias", "MLP biases are not supported (expected false)");
  }
  if (f.optional_bool("use_sliding_window").value_or(false)) {
    f.fail("use_sliding_window", "sliding-window attention is not supported (expected false)");
  }
  c.tie_word_embeddings = f.optional_bool("tie_word_embeddings").value_or(false);

  c.bos_token_id = f.optional_int("bos_token_id");
  c.eos_token_ids = f.int_or_int_list("eos_token_id");
  // transformers 5 renamed torch_dtype to dtype.
  c.torch_dtype = f.optional_string("torch_dtype").value_or(f.optional_string("dtype").value_or(""));
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& dir) {
  const auto path = dir / "config.json";
  return parse_model_config(read_text_file(path), path.string());
}

}  // namespace flashdraft::io
