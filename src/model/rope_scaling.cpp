#include "model/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ops/ops.h"

// Built with -ffp-contract=off: each float32 step below rounds on its own, as
// torch's elementwise ops do.

namespace flashdraft::model {
namespace {

using io::RopeConfig;

// Python scalars meet float32 tensors as float32 (torch casts the scalar).
float f32(double v) { return static_cast<float>(v); }

// transformers' _compute_llama3_parameters: frequencies whose wavelength is
// beyond the original context are divided by factor, those below
// original / high_freq_factor kept, the band between blended. Note torch's
// `scalar / tensor` is reciprocal(tensor) * scalar.
void llama3(const RopeConfig& c, std::vector<float>& inv) {
  const double old_context = static_cast<double>(c.original_max_position_embeddings);
  const float low_wavelen = f32(old_context / c.low_freq_factor);
  const float high_wavelen = f32(old_context / c.high_freq_factor);
  const float two_pi = f32(2 * std::numbers::pi), factor = f32(c.factor);
  const float low = f32(c.low_freq_factor), band = f32(c.high_freq_factor - c.low_freq_factor);
  for (float& f : inv) {
    const float wavelen = (1.0f / f) * two_pi;
    const float scaled = wavelen > low_wavelen ? f / factor : f;
    const float smooth = ((1.0f / wavelen) * f32(old_context) - low) / band;
    const float blended = (1.0f - smooth) * scaled / factor + smooth * scaled;
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    f = medium ? blended : scaled;
  }
}

// transformers' get_mscale.
double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

// The dimension at which a frequency turns num_rotations times over the
// original context (double, as Python computes it).
double yarn_correction_dim(double num_rotations, double dim, double base, double context) {
  return (dim * std::log(context / (num_rotations * 2 * std::numbers::pi))) / (2 * std::log(base));
}

// transformers' _compute_yarn_parameters: interpolated (divided by factor)
// below the ramp, extrapolated (kept) above, linear in between.
float yarn(const RopeConfig& c, int64_t head_dim, std::vector<float>& inv) {
  const double dim = static_cast<double>(head_dim);
  const double context = static_cast<double>(c.original_max_position_embeddings);
  double low = yarn_correction_dim(c.beta_fast, dim, c.theta, context);
  double high = yarn_correction_dim(c.beta_slow, dim, c.theta, context);
  if (c.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // transformers: "prevent singularity"

  std::vector<float> powers(inv.size());
  ops::cpu::rope_base_powers(c.theta, head_dim, powers.data());
  const float factor = f32(c.factor), low_f = f32(low), span = f32(high - low);
  for (size_t i = 0; i < inv.size(); ++i) {
    const float extrapolation = 1.0f / powers[i];
    const float interpolation = 1.0f / (factor * powers[i]);
    const float ramp = std::clamp((static_cast<float>(i) - low_f) / span, 0.0f, 1.0f);
    const float keep = 1.0f - ramp;  // inv_freq_extrapolation_factor
    inv[i] = interpolation * (1.0f - keep) + extrapolation * keep;
  }

  if (c.attention_factor) return f32(*c.attention_factor);
  if (c.mscale != 0 && c.mscale_all_dim != 0)
    return f32(yarn_mscale(c.factor, c.mscale) / yarn_mscale(c.factor, c.mscale_all_dim));
  return f32(yarn_mscale(c.factor, 1));
}

}  // namespace

RopeTable rope_table(const io::ModelConfig& cfg) {
  const RopeConfig& c = cfg.rope;
  RopeTable t;
  t.inv_freq.resize(static_cast<size_t>(cfg.head_dim / 2));
  ops::cpu::rope_inv_freq(c.theta, cfg.head_dim, t.inv_freq.data());
  switch (c.type) {
    case io::RopeType::kDefault:
      break;
    case io::RopeType::kLinear:
      for (float& f : t.inv_freq) f /= f32(c.factor);
      break;
    case io::RopeType::kLlama3:
      llama3(c, t.inv_freq);
      break;
    case io::RopeType::kYarn:
      t.attention_factor = yarn(c, cfg.head_dim, t.inv_freq);
      break;
  }
  return t;
}

}  // namespace flashdraft::model
