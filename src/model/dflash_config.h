#pragma once
// A DFlash drafter's config.json (DFLASH.md section 1), read field by field
// and checked against the target it drafts for. Everything the drafter's
// forward depends on lives here; nothing is hard-coded elsewhere.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/model_config.h"

namespace flashdraft::model {

// How one drafter layer's queries (the block rows) see keys: the context
// before the block, then the block itself. A query at position p sees key j
// (j < context + block) when
//   causal:  j <= p, and with a window also j > p - window;
//   !causal: every key, and with a window only p - window < j < p + window.
// That is ops::AttentionMask{causal, window} exactly.
struct DFlashLayerAttention {
  bool sliding = false;
  int64_t window = 0;   // > 0 exactly when sliding
  bool causal = false;
};

// The layer kinds as vLLM resolves them (qwen3_dflash.py,
// _resolve_layer_attention and _dflash_layer_causal):
//   sliding: layer_types[i] is "sliding_attention"; dflash_config.use_swa
//            makes every layer slide, but only when no layer_types entry
//            slides. Without layer_types, transformers' Qwen3 rule: layers
//            i >= max_window_layers slide when use_sliding_window is set.
//   window:  dflash_config.swa_window_size, else sliding_window (which
//            transformers drops unless use_sliding_window is true).
//   causal:  top-level is_causal if present, else dflash_config.causal, else
//            exactly the sliding layers.
struct DFlashConfig {
  io::ModelConfig model;                  // the drafter's decoder geometry
  int64_t block_size = 0;                 // B: anchor + (B - 1) mask tokens
  int64_t num_target_layers = 0;          // the config's, else the target's; 0: unknown
  std::vector<int64_t> target_layer_ids;  // taps, in fc input order; empty: unknown
  bool default_taps = false;              // target_layer_ids absent: z-lab's rule gave them
  int32_t mask_token_id = 0;
  std::vector<DFlashLayerAttention> layers;  // one per drafter layer
  std::optional<double> final_logit_softcapping;
  std::optional<double> input_embedding_scale;

  int64_t num_taps() const { return static_cast<int64_t>(target_layer_ids.size()); }
};

// io::load_model_config for a drafter directory. io reads plain decoders and
// refuses sliding windows, layer_types other than full attention and the
// DFlashDraftModel architecture; a drafter reads those itself (here), so
// they are taken out before io's checks and kept in `raw`. The
// architectures must be ["DFlashDraftModel"] (when given).
io::ModelConfig load_drafter_model_config(const std::filesystem::path& dir);

// The DFlash fields of `drafter` (from drafter_dir/config.json) on their own:
// block size >= 2, taps, mask id, layer kinds, head_dim, no attention bias.
// target_layers: the target's layer count when known (default taps and
// num_target_layers come from it when the config lacks them). Throws
// flashdraft::Error naming the file and field.
DFlashConfig read_dflash_config(const io::ModelConfig& drafter, const std::filesystem::path& drafter_dir,
                                std::optional<int64_t> target_layers = std::nullopt);

// Why `d` cannot draft for `target`, one line per mismatch, each naming the
// drafter's file and field: width, vocabulary, num_target_layers, tap ids
// inside the target, mask id inside the target's vocabulary (its embedding
// is used). Empty when the pair fits.
std::vector<std::string> dflash_pair_problems(const DFlashConfig& d, const io::ModelConfig& target,
                                              const std::filesystem::path& drafter_dir);

// read_dflash_config with the target's layer count, then the first of
// dflash_pair_problems, if any, as a flashdraft::Error.
DFlashConfig parse_dflash_config(const io::ModelConfig& drafter, const io::ModelConfig& target,
                                 const std::filesystem::path& drafter_dir);

// z-lab's default taps when dflash_config.target_layer_ids is absent:
// int(round(1 + i * (N - 4) / (L - 1))) for i < L, Python's round (ties to
// even); [N / 2] when L == 1. N = target layers, L = drafter layers.
std::vector<int64_t> default_target_layer_ids(int64_t num_target_layers, int64_t num_drafter_layers);

}  // namespace flashdraft::model
