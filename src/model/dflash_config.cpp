#include "model/dflash_config.h"

#include <cfenv>
#include <cmath>
#include <string>

#include "core/error.h"
#include "io/json_fields.h"
#include "io/json_text.h"

namespace flashdraft::model {
namespace {

using nlohmann::json;

std::string str(int64_t v) { return std::to_string(v); }

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// A field that z-lab keeps inside dflash_config and other exporters at the top
// level: either place is read, and two different values are an error.
std::optional<int64_t> int_in_either(const io::JsonFields& top, const io::JsonFields* dc, const std::string& key) {
  auto a = top.optional_int(key);
  std::optional<int64_t> b;
  if (dc) b = dc->optional_int(key);
  if (a && b && *a != *b)
    top.fail(key, "top-level value " + str(*a) + " disagrees with dflash_config." + key + " = " + str(*b));
  return a ? a : b;
}

std::optional<double> number_in_either(const io::JsonFields& top, const io::JsonFields* dc, const std::string& key) {
  auto a = top.optional_number(key);
  std::optional<double> b;
  if (dc) b = dc->optional_number(key);
  if (a && b && *a != *b) top.fail(key, "top-level value disagrees with dflash_config." + key);
  return a ? a : b;
}

std::vector<int64_t> int_list(const io::JsonFields& f, const json& obj, const std::string& key) {
  const json& v = obj[key];
  if (!v.is_array()) f.fail(key, "expected a list of integers, found " + io::json_excerpt(v));
  std::vector<int64_t> out;
  for (const auto& e : v) {
    if (!e.is_number_integer()) f.fail(key, "expected a list of integers, found " + io::json_excerpt(v));
    out.push_back(e.get<int64_t>());
  }
  return out;
}

// Per-layer attention kinds from layer_types / sliding_window / use_swa /
// causal. Transformers' Qwen3 derives layer_types from use_sliding_window and
// max_window_layers when the list is absent; the same rule is applied here.
std::vector<DFlashLayerAttention> read_layer_kinds(const io::ModelConfig& d, const io::JsonFields& top,
                                                   const io::JsonFields* dc) {
  const int64_t L = d.num_hidden_layers;

  std::optional<bool> causal;
  if (dc) causal = dc->optional_bool("causal");
  if (auto is_causal = top.optional_bool("is_causal")) {
    if (causal && *causal != *is_causal)
      top.fail("is_causal", std::string("disagrees with dflash_config.causal (") + (*causal ? "true" : "false") + ")");
    causal = is_causal;
  }

  std::vector<std::string> types;
  if (top.has("layer_types")) {
    types = top.string_list("layer_types");
    if (static_cast<int64_t>(types.size()) != L)
      top.fail("layer_types", "expected one entry per drafter layer (num_hidden_layers = " + str(L) + "), found " +
                                  str(static_cast<int64_t>(types.size())));
  } else if (top.optional_bool("use_sliding_window").value_or(false)) {
    const auto first_sliding = top.optional_int("max_window_layers");
    if (!first_sliding)
      top.fail("max_window_layers", "missing: with use_sliding_window and no layer_types it says which layers slide");
    for (int64_t i = 0; i < L; ++i) types.push_back(i >= *first_sliding ? "sliding_attention" : "full_attention");
  } else {
    types.assign(static_cast<size_t>(L), "full_attention");
  }

  const auto sliding_window = top.optional_int("sliding_window");
  bool use_swa = top.optional_bool("use_swa").value_or(false);
  if (dc) use_swa = dc->optional_bool("use_swa").value_or(false) || use_swa;
  std::optional<int64_t> swa_window;
  if (use_swa) {
    swa_window = int_in_either(top, dc, "swa_window_size");
    if (!swa_window || *swa_window <= 0)
      top.fail("dflash_config.swa_window_size", "use_swa is set, so a positive window is required, found " +
                                                    (swa_window ? str(*swa_window) : std::string("nothing")));
  }

  std::vector<DFlashLayerAttention> kinds;
  for (int64_t i = 0; i < L; ++i) {
    const std::string& t = types[static_cast<size_t>(i)];
    DFlashLayerAttention k;
    if (t == "sliding_attention") {
      if (!sliding_window || *sliding_window <= 0)
        top.fail("sliding_window", "layer " + str(i) +
                                       " is sliding_attention, so a positive window is required, found " +
                                       (sliding_window ? str(*sliding_window) : std::string("null")));
      if (swa_window && *swa_window != *sliding_window)
        top.fail("sliding_window", "disagrees with dflash_config.swa_window_size (" + str(*swa_window) + ")");
      k.sliding = true;
      k.window = *sliding_window;
    } else if (t != "full_attention") {
      top.fail("layer_types",
               "entry " + str(i) + " is \"" + t + "\"; expected \"full_attention\" or \"sliding_attention\"");
    }
    if (use_swa) {  // every layer windowed
      k.sliding = true;
      k.window = *swa_window;
    }
    k.causal = k.sliding || causal.value_or(false);
    kinds.push_back(k);
  }
  return kinds;
}

}  // namespace

std::vector<int64_t> default_target_layer_ids(int64_t num_target_layers, int64_t num_drafter_layers) {
  if (num_drafter_layers == 1) return {num_target_layers / 2};
  std::vector<int64_t> ids;
  const int saved = std::fegetround();
  std::fesetround(FE_TONEAREST);  // Python's round(): halves go to the even neighbour
  for (int64_t i = 0; i < num_drafter_layers; ++i) {
    const double v =
        1.0 + static_cast<double>(i * (num_target_layers - 4)) / static_cast<double>(num_drafter_layers - 1);
    ids.push_back(static_cast<int64_t>(std::nearbyint(v)));
  }
  std::fesetround(saved);
  return ids;
}

io::ModelConfig load_drafter_model_config(const std::filesystem::path& dir) {
  const auto path = dir / "config.json";
  const std::string source = path.string();
  json raw = io::parse_json(io::read_text_file(path), source);
  if (!raw.is_object()) throw Error(source + ": expected a JSON object");
  json for_io = raw;
  // The drafter honours the window itself (read_layer_kinds); io must not refuse it.
  if (for_io.contains("use_sliding_window") && for_io["use_sliding_window"].is_boolean())
    for_io.erase("use_sliding_window");
  io::ModelConfig cfg = io::parse_model_config(for_io.dump(), source);
  cfg.raw = std::move(raw);
  return cfg;
}

DFlashConfig parse_dflash_config(const io::ModelConfig& drafter, const io::ModelConfig& target,
                                 const std::filesystem::path& drafter_dir) {
  const std::string source = (drafter_dir / "config.json").string();
  const io::JsonFields top(drafter.raw, source);
  std::optional<io::JsonFields> dc_fields;
  if (top.has("dflash_config")) {
    if (!drafter.raw["dflash_config"].is_object())
      top.fail("dflash_config", "expected an object, found " + io::json_excerpt(drafter.raw["dflash_config"]));
    dc_fields.emplace(drafter.raw["dflash_config"], source, "dflash_config.");
  }
  const io::JsonFields* dc = dc_fields ? &*dc_fields : nullptr;

  DFlashConfig c;
  c.model = drafter;

  if (drafter.hidden_size != target.hidden_size)
    top.fail("hidden_size", str(drafter.hidden_size) + " differs from the target's " + str(target.hidden_size) +
                                "; the drafter runs on the target's embedding and lm_head, so they must match");
  if (drafter.head_dim % 2 != 0) top.fail("head_dim", "must be even for RoPE, found " + str(drafter.head_dim));
  if (drafter.attention_bias) top.fail("attention_bias", "DFlash drafters have no attention biases (expected false)");

  auto block = int_in_either(top, dc, "block_size");
  if (!block) top.fail("block_size", "missing (required: the drafter's block size, >= 2)");
  if (*block < 2)
    top.fail("block_size", "expected >= 2 (the anchor plus at least one mask token), found " + str(*block));
  c.block_size = *block;

  c.num_target_layers = target.num_hidden_layers;
  if (auto n = top.optional_int("num_target_layers"); n && *n != target.num_hidden_layers)
    top.fail("num_target_layers", str(*n) + " differs from the target's num_hidden_layers (" +
                                      str(target.num_hidden_layers) + "): this drafter was trained for another target");

  if (dc && dc->has("target_layer_ids")) {
    c.target_layer_ids = int_list(*dc, drafter.raw["dflash_config"], "target_layer_ids");
    if (c.target_layer_ids.empty()) dc->fail("target_layer_ids", "expected at least one tap layer");
  } else {
    c.target_layer_ids = default_target_layer_ids(target.num_hidden_layers, drafter.num_hidden_layers);
  }
  for (int64_t id : c.target_layer_ids)
    if (id < 0 || id >= target.num_hidden_layers)
      top.fail("dflash_config.target_layer_ids", list_text(c.target_layer_ids) + " names layer " + str(id) +
                                                     ", but the target has layers 0.." +
                                                     str(target.num_hidden_layers - 1));

  std::optional<int64_t> mask;
  if (dc) mask = dc->optional_int("mask_token_id");
  if (auto top_mask = top.optional_int("mask_token_id")) {
    if (mask && *mask != *top_mask) top.fail("mask_token_id", "disagrees with dflash_config.mask_token_id");
    mask = top_mask;
  }
  if (!mask) top.fail("dflash_config.mask_token_id", "missing (required: the id of the mask token)");
  if (*mask < 0 || *mask >= target.vocab_size)
    top.fail("dflash_config.mask_token_id",
             str(*mask) + " is outside the target's vocabulary [0, " + str(target.vocab_size) + ")");
  c.mask_token_id = static_cast<int32_t>(*mask);

  c.layers = read_layer_kinds(drafter, top, dc);

  if (auto cap = top.optional_number("final_logit_softcapping")) {
    if (!std::isfinite(*cap) || *cap < 0)
      top.fail("final_logit_softcapping", "expected a positive number (or null / 0 for none)");
    if (*cap > 0) c.final_logit_softcapping = *cap;
  }
  if (auto scale = number_in_either(top, dc, "input_embedding_scale")) {
    if (!std::isfinite(*scale) || *scale <= 0) top.fail("input_embedding_scale", "expected a positive number");
    c.input_embedding_scale = *scale;
  }
  return c;
}

}  // namespace flashdraft::model
