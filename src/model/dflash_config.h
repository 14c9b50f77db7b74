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

// How one drafter layer's queries (the block rows) see keys.
//   full_attention:    all context, bidirectional inside the block (causal
//                      inside the block only if the config says causal)
//   sliding_attention: causal inside the block, and a query at position p
//                      sees keys at positions in (p - window, p]
struct DFlashLayerAttention {
  bool sliding = false;
  int64_t window = 0;   // > 0 exactly when sliding
  bool causal = false;  // inside the block; always true when sliding
};

struct DFlashConfig {
  io::ModelConfig model;                  // the drafter's decoder geometry
  int64_t block_size = 0;                 // B: anchor + (B - 1) mask tokens
  int64_t num_target_layers = 0;          // the target's layer count
  std::vector<int64_t> target_layer_ids;  // taps, in fc input order
  int32_t mask_token_id = 0;
  std::vector<DFlashLayerAttention> layers;  // one per drafter layer
  std::optional<double> final_logit_softcapping;
  std::optional<double> input_embedding_scale;

  int64_t num_taps() const { return static_cast<int64_t>(target_layer_ids.size()); }
};

// io::load_model_config for a drafter directory. io refuses
// use_sliding_window = true because a plain decoder would ignore the window;
// a drafter reads its windows from the config itself (parse_dflash_config),
// so that one flag is taken out before io's checks and kept in `raw`.
io::ModelConfig load_drafter_model_config(const std::filesystem::path& dir);

// Reads the DFlash fields of `drafter` (from drafter_dir/config.json) and
// checks them against the target: tap ids inside the target, the target's
// layer count, mask id inside the target's vocabulary (its embedding is
// used), block size >= 2, drafter width == target width, head geometry,
// layer kinds. Throws flashdraft::Error naming the file and field.
DFlashConfig parse_dflash_config(const io::ModelConfig& drafter, const io::ModelConfig& target,
                                 const std::filesystem::path& drafter_dir);

// z-lab's default taps when dflash_config.target_layer_ids is absent:
// int(round(1 + i * (N - 4) / (L - 1))) for i < L, Python's round (ties to
// even); [N / 2] when L == 1. N = target layers, L = drafter layers.
std::vector<int64_t> default_target_layer_ids(int64_t num_target_layers, int64_t num_drafter_layers);

}  // namespace flashdraft::model
