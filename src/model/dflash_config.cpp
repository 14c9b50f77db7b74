#include "model/dflash_config.h"

#include <cfenv>
#include <cstdint>
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

// Per-layer attention kinds, by the rules in dflash_config.h.
std::vector<DFlashLayerAttention> read_layer_kinds(const io::ModelConfig& d, const io::JsonFields& top,
                                                   const io::JsonFields* dc) {
  const int64_t L = d.num_hidden_layers;
  const bool use_sliding_window = top.optional_bool("use_sliding_window").value_or(false);
  const auto sliding_window = top.optional_int("sliding_window");
  // transformers' Qwen3Config: sliding_window = sliding_window if use_sliding_window else None.
  const auto hf_window = use_sliding_window ? sliding_window : std::nullopt;

  std::vector<std::string> types;
  if (top.has("layer_types")) {
    types = top.string_list("layer_types");
    if (static_cast<int64_t>(types.size()) != L)
      top.fail("layer_types", "expected one entry per drafter layer (num_hidden_layers = " + str(L) + "), found " +
                                  str(static_cast<int64_t>(types.size())));
    for (size_t i = 0; i < types.size(); ++i)
      if (types[i] != "full_attention" && types[i] != "sliding_attention")
        top.fail("layer_types", "entry " + str(static_cast<int64_t>(i)) + " is \"" + types[i] +
                                    "\"; a DFlash drafter layer is \"full_attention\" or \"sliding_attention\"");
  } else {
    const int64_t first_sliding = top.optional_int("max_window_layers").value_or(28);  // transformers' default
    for (int64_t i = 0; i < L; ++i)
      types.push_back(hf_window && i >= first_sliding ? "sliding_attention" : "full_attention");
  }
  bool any_sliding = false;
  for (const auto& t : types) any_sliding = any_sliding || t == "sliding_attention";

  std::optional<bool> use_swa;
  if (dc) use_swa = dc->optional_bool("use_swa");
  if (!use_swa) use_swa = top.optional_bool("use_swa");
  const auto swa_window = int_in_either(top, dc, "swa_window_size");
  if (swa_window && *swa_window <= 0)
    top.fail("dflash_config.swa_window_size", "expected a positive window, found " + str(*swa_window));
  const auto window = swa_window ? swa_window : hf_window;
  const bool every_layer_slides = use_swa.value_or(false) && !any_sliding;

  std::optional<bool> causal = top.optional_bool("is_causal");
  if (!causal && dc) causal = dc->optional_bool("causal");

  std::vector<DFlashLayerAttention> kinds;
  for (int64_t i = 0; i < L; ++i) {
    DFlashLayerAttention k;
    k.sliding = every_layer_slides || types[static_cast<size_t>(i)] == "sliding_attention";
    if (k.sliding) {
      if (every_layer_slides && !window)
        top.fail("dflash_config.swa_window_size", "use_swa is set, so a positive window is required, found nothing");
      if (!window || *window <= 0) {
        std::string found = sliding_window ? str(*sliding_window) : std::string("null");
        if (sliding_window && !use_sliding_window)
          found += " with use_sliding_window false (transformers then drops the window)";
        top.fail("sliding_window", "layer " + str(i) + " is sliding_attention, so a positive window is required, found " +
                                       found);
      }
      k.window = *window;
    }
    k.causal = causal.value_or(k.sliding);
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
  const io::JsonFields top(raw, source);
  const auto archs = top.string_list("architectures");
  for (const auto& a : archs)
    if (a != "DFlashDraftModel")
      top.fail("architectures", "\"" + a + "\" is not a DFlash drafter (expected [\"DFlashDraftModel\"])" +
                                    (a == "Qwen3ForCausalLM" || a == "LlamaForCausalLM" ? ": is this the target?" : ""));
  json for_io = raw;
  // The drafter honours windows and layer kinds itself (read_layer_kinds).
  for (const char* key : {"use_sliding_window", "layer_types", "architectures"}) for_io.erase(key);
  io::ModelConfig cfg = io::parse_model_config(for_io.dump(), source);
  cfg.architectures = archs;
  cfg.raw = std::move(raw);
  return cfg;
}

DFlashConfig read_dflash_config(const io::ModelConfig& drafter, const std::filesystem::path& drafter_dir,
                                std::optional<int64_t> target_layers) {
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
  if (drafter.head_dim % 2 != 0) top.fail("head_dim", "must be even for RoPE, found " + str(drafter.head_dim));
  if (drafter.attention_bias) top.fail("attention_bias", "DFlash drafters have no attention biases (expected false)");

  auto block = int_in_either(top, dc, "block_size");
  if (!block) top.fail("block_size", "missing (required: the drafter's block size, >= 2)");
  if (*block < 2)
    top.fail("block_size", "expected >= 2 (the anchor plus at least one mask token), found " + str(*block));
  c.block_size = *block;

  const auto n = top.optional_int("num_target_layers");
  if (n && *n <= 0) top.fail("num_target_layers", "expected a positive integer, found " + str(*n));
  c.num_target_layers = n ? *n : target_layers.value_or(0);

  if (dc && dc->has("target_layer_ids")) {
    c.target_layer_ids = int_list(*dc, drafter.raw["dflash_config"], "target_layer_ids");
    if (c.target_layer_ids.empty()) dc->fail("target_layer_ids", "expected at least one tap layer");
  } else if (const int64_t N = target_layers.value_or(c.num_target_layers); N > 0) {
    c.target_layer_ids = default_target_layer_ids(N, drafter.num_hidden_layers);
    c.default_taps = true;
  }
  for (int64_t id : c.target_layer_ids)
    if (id < 0) top.fail("dflash_config.target_layer_ids", list_text(c.target_layer_ids) + " names layer " + str(id));

  std::optional<int64_t> mask;
  if (dc) mask = dc->optional_int("mask_token_id");
  if (auto top_mask = top.optional_int("mask_token_id")) {
    if (mask && *mask != *top_mask) top.fail("mask_token_id", "disagrees with dflash_config.mask_token_id");
    mask = top_mask;
  }
  if (!mask) top.fail("dflash_config.mask_token_id", "missing (required: the id of the mask token)");
  if (*mask < 0 || *mask > INT32_MAX) top.fail("dflash_config.mask_token_id", "not a token id: " + str(*mask));
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

std::vector<std::string> dflash_pair_problems(const DFlashConfig& d, const io::ModelConfig& target,
                                              const std::filesystem::path& drafter_dir) {
  const std::string source = (drafter_dir / "config.json").string();
  std::vector<std::string> out;
  const auto problem = [&](const std::string& field, const std::string& what) {
    out.push_back(source + ": field \"" + field + "\": " + what);
  };
  const io::ModelConfig& m = d.model;
  if (m.hidden_size != target.hidden_size)
    problem("hidden_size", str(m.hidden_size) + " differs from the target's " + str(target.hidden_size) +
                               "; the drafter runs on the target's embedding and lm_head, so they must match");
  if (m.vocab_size != target.vocab_size)
    problem("vocab_size", str(m.vocab_size) + " differs from the target's " + str(target.vocab_size) +
                              ": this drafter was trained with another tokenizer");
  if (d.num_target_layers != 0 && d.num_target_layers != target.num_hidden_layers)
    problem("num_target_layers", str(d.num_target_layers) + " differs from the target's num_hidden_layers (" +
                                     str(target.num_hidden_layers) + "): this drafter was trained for another target");
  for (int64_t id : d.target_layer_ids)
    if (id >= target.num_hidden_layers) {
      problem("dflash_config.target_layer_ids", list_text(d.target_layer_ids) + " names layer " + str(id) +
                                                    ", but the target has layers 0.." +
                                                    str(target.num_hidden_layers - 1));
      break;
    }
  if (d.mask_token_id >= target.vocab_size)
    problem("dflash_config.mask_token_id",
            str(d.mask_token_id) + " is outside the target's vocabulary [0, " + str(target.vocab_size) + ")");
  return out;
}

DFlashConfig parse_dflash_config(const io::ModelConfig& drafter, const io::ModelConfig& target,
                                 const std::filesystem::path& drafter_dir) {
  DFlashConfig c = read_dflash_config(drafter, drafter_dir, target.num_hidden_layers);
  const auto problems = dflash_pair_problems(c, target, drafter_dir);
  if (!problems.empty()) throw Error(problems.front());
  return c;
}

}  // namespace flashdraft::model
