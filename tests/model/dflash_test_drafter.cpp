#include "dflash_test_drafter.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace flashdraft::model::testing {

using nlohmann::json;
namespace fs = std::filesystem;

json tiny_drafter_config() {
  return json{{"architectures", {"DFlashDraftModel"}},
              {"model_type", "qwen3"},
              {"block_size", 8},
              {"num_target_layers", 3},
              {"dflash_config", {{"mask_token_id", 500}, {"target_layer_ids", {0, 2}}}},
              {"hidden_size", 64},
              {"intermediate_size", 96},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"head_dim", 16},
              {"hidden_act", "silu"},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 10000.0},
              {"rope_scaling", nullptr},
              {"attention_bias", false},
              {"max_position_embeddings", 1024},
              {"vocab_size", 512},
              {"layer_types", {"sliding_attention", "full_attention"}},
              {"sliding_window", 4},
              {"use_sliding_window", true},
              {"tie_word_embeddings", false},
              {"torch_dtype", "float32"}};
}

Tensors random_drafter_weights(const json& c, uint32_t seed) {
  const int64_t H = c["hidden_size"], I = c["intermediate_size"], L = c["num_hidden_layers"], hd = c["head_dim"];
  const int64_t nh = c["num_attention_heads"], nkv = c["num_key_value_heads"];
  const int64_t K = static_cast<int64_t>(c["dflash_config"]["target_layer_ids"].size());
  std::mt19937 gen(seed);
  Tensors t;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape, double mean, double std) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::normal_distribution<float> dist(static_cast<float>(mean), static_cast<float>(std));
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(gen);
    t[name] = {std::move(shape), std::move(v)};
  };
  // Large enough weights that attention is far from uniform and every part
  // of the forward moves the logits.
  add("fc.weight", {H, K * H}, 0, 0.15);
  add("hidden_norm.weight", {H}, 1, 0.2);
  for (int64_t i = 0; i < L; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {H}, 1, 0.2);
    add(p + "post_attention_layernorm.weight", {H}, 1, 0.2);
    add(p + "self_attn.q_proj.weight", {nh * hd, H}, 0, 0.3);
    add(p + "self_attn.k_proj.weight", {nkv * hd, H}, 0, 0.3);
    add(p + "self_attn.v_proj.weight", {nkv * hd, H}, 0, 0.3);
    add(p + "self_attn.o_proj.weight", {H, nh * hd}, 0, 0.1);
    add(p + "self_attn.q_norm.weight", {hd}, 1, 0.3);
    add(p + "self_attn.k_norm.weight", {hd}, 1, 0.3);
    add(p + "mlp.gate_proj.weight", {I, H}, 0, 0.15);
    add(p + "mlp.up_proj.weight", {I, H}, 0, 0.15);
    add(p + "mlp.down_proj.weight", {H, I}, 0, 0.15);
  }
  add("norm.weight", {H}, 1, 0.2);
  return t;
}

void write_drafter(const fs::path& dir, const json& config, const Tensors& weights) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2) << "\n";
  json header = json::object();
  std::string data;
  for (const auto& [name, tensor] : weights) {
    const auto& [shape, values] = tensor;
    header[name] = {
        {"dtype", "F32"}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + values.size() * 4}}};
    data.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::string image(8, '\0');
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) image[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  std::ofstream(dir / "model.safetensors", std::ios::binary) << image << text << data;
}

namespace {

using Mat = std::vector<double>;

Mat to_double(const std::vector<float>& v) { return Mat(v.begin(), v.end()); }

// y[n, out] = x[n, in] w[out, in]^T
Mat linear(const Mat& x, const Mat& w, int64_t n, int64_t in, int64_t out) {
  Mat y(static_cast<size_t>(n * out), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

Mat rms(const Mat& x, const Mat& w, int64_t rows, int64_t dim, double eps) {
  Mat y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[r * dim + i] * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = x[r * dim + i] * inv * w[i];
  }
  return y;
}

// Neox RoPE on [rows, heads, hd], row r at pos[r].
void rope(Mat& x, const std::vector<int64_t>& pos, int64_t heads, int64_t hd, double theta) {
  const int64_t half = hd / 2;
  for (size_t r = 0; r < pos.size(); ++r)
    for (int64_t h = 0; h < heads; ++h) {
      double* v = &x[(r * heads + h) * hd];
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos[r]) / std::pow(theta, 2.0 * i / static_cast<double>(hd));
        const double x0 = v[i], x1 = v[i + half];
        v[i] = x0 * std::cos(a) - x1 * std::sin(a);
        v[i + half] = x1 * std::cos(a) + x0 * std::sin(a);
      }
    }
}

}  // namespace

std::vector<double> naive_draft(const json& c, const io::Checkpoint& ck, const std::vector<float>& embed,
                                const std::vector<float>& lm_head, const std::vector<float>& taps, int64_t S,
                                int32_t anchor, int64_t B) {
  const int64_t H = c["hidden_size"], I = c["intermediate_size"], L = c["num_hidden_layers"], hd = c["head_dim"];
  const int64_t nh = c["num_attention_heads"], nkv = c["num_key_value_heads"], V = c["vocab_size"];
  const double eps = c["rms_norm_eps"], theta = c["rope_theta"];
  const auto& dc = c["dflash_config"];
  const int64_t K = static_cast<int64_t>(dc["target_layer_ids"].size());
  const int32_t mask = dc["mask_token_id"];
  // Layer kinds written out independently of model/dflash_config (the rules
  // of its header): sliding per layer_types, use_swa slides every layer only
  // when none is listed as sliding; is_causal, then dflash_config.causal,
  // then "causal iff sliding".
  bool any_sliding = false;
  for (const auto& t : c["layer_types"]) any_sliding = any_sliding || t == "sliding_attention";
  const bool use_swa = dc.value("use_swa", false) && !any_sliding;
  const json no_flag;
  const json& is_causal = c.contains("is_causal") ? c["is_causal"] : no_flag;
  const json& dc_causal = dc.contains("causal") ? dc["causal"] : no_flag;
  const auto layer_causal = [&](bool sliding) {
    if (!is_causal.is_null()) return is_causal.get<bool>();
    if (!dc_causal.is_null()) return dc_causal.get<bool>();
    return sliding;
  };
  const auto W = [&](const std::string& name) {
    std::vector<int64_t> shape;
    for (int64_t d : ck.get(name).shape) shape.push_back(d);
    return to_double(ck.load_f32(name, shape));
  };

  const Mat ctx = rms(linear(to_double(taps), W("fc.weight"), S, K * H, H), W("hidden_norm.weight"), S, H, eps);
  Mat x(static_cast<size_t>(B * H));
  const double escale = c.value("input_embedding_scale", 1.0);
  for (int64_t r = 0; r < B; ++r) {
    const int64_t id = r == 0 ? anchor : mask;
    for (int64_t i = 0; i < H; ++i) x[r * H + i] = embed[id * H + i] * escale;
  }
  std::vector<int64_t> ctx_pos(static_cast<size_t>(S)), blk_pos(static_cast<size_t>(B));
  for (int64_t i = 0; i < S; ++i) ctx_pos[i] = i;
  for (int64_t i = 0; i < B; ++i) blk_pos[i] = S + i;

  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const bool sliding = use_swa || c["layer_types"][l] == "sliding_attention";
    const int64_t window = !sliding                         ? 0
                           : dc.contains("swa_window_size") ? dc["swa_window_size"].get<int64_t>()
                                                            : c["sliding_window"].get<int64_t>();
    const bool causal = layer_causal(sliding);

    const Mat y = rms(x, W(p + "input_layernorm.weight"), B, H, eps);
    const Mat qn = W(p + "self_attn.q_norm.weight"), kn = W(p + "self_attn.k_norm.weight");
    Mat q = rms(linear(y, W(p + "self_attn.q_proj.weight"), B, H, nh * hd), qn, B * nh, hd, eps);
    Mat kb = rms(linear(y, W(p + "self_attn.k_proj.weight"), B, H, nkv * hd), kn, B * nkv, hd, eps);
    const Mat vb = linear(y, W(p + "self_attn.v_proj.weight"), B, H, nkv * hd);
    Mat kc = rms(linear(ctx, W(p + "self_attn.k_proj.weight"), S, H, nkv * hd), kn, S * nkv, hd, eps);
    const Mat vc = linear(ctx, W(p + "self_attn.v_proj.weight"), S, H, nkv * hd);
    rope(q, blk_pos, nh, hd, theta);
    rope(kb, blk_pos, nkv, hd, theta);
    rope(kc, ctx_pos, nkv, hd, theta);

    Mat attn(static_cast<size_t>(B * nh * hd), 0.0);
    for (int64_t i = 0; i < B; ++i)
      for (int64_t h = 0; h < nh; ++h) {
        const int64_t g = h / (nh / nkv), qp = S + i;
        std::vector<double> s;
        std::vector<const double*> vs;
        for (int64_t j = 0; j < S + B; ++j) {  // key j: context row j, or block row j - S; position j either way
          const bool blk = j >= S;
          if (blk && causal && j > qp) continue;
          if (window > 0 && !(j > qp - window && j < qp + window)) continue;
          const double* k = blk ? &kb[((j - S) * nkv + g) * hd] : &kc[(j * nkv + g) * hd];
          vs.push_back(blk ? &vb[((j - S) * nkv + g) * hd] : &vc[(j * nkv + g) * hd]);
          double d = 0;
          for (int64_t e = 0; e < hd; ++e) d += q[(i * nh + h) * hd + e] * k[e];
          s.push_back(d / std::sqrt(static_cast<double>(hd)));
        }
        double mx = -INFINITY, sum = 0;
        for (double v : s) mx = std::max(mx, v);
        for (double v : s) sum += std::exp(v - mx);
        for (size_t t = 0; t < s.size(); ++t)
          for (int64_t e = 0; e < hd; ++e) attn[(i * nh + h) * hd + e] += std::exp(s[t] - mx) / sum * vs[t][e];
      }
    const Mat o = linear(attn, W(p + "self_attn.o_proj.weight"), B, nh * hd, H);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    const Mat y2 = rms(x, W(p + "post_attention_layernorm.weight"), B, H, eps);
    Mat gate = linear(y2, W(p + "mlp.gate_proj.weight"), B, H, I);
    const Mat up = linear(y2, W(p + "mlp.up_proj.weight"), B, H, I);
    for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
    const Mat d = linear(gate, W(p + "mlp.down_proj.weight"), B, I, H);
    for (size_t i = 0; i < x.size(); ++i) x[i] += d[i];
  }
  const Mat xs(x.begin() + H, x.end());
  Mat logits = linear(rms(xs, W("norm.weight"), B - 1, H, eps), to_double(lm_head), B - 1, H, V);
  if (c.contains("final_logit_softcapping") && !c["final_logit_softcapping"].is_null()) {
    const double cap = c["final_logit_softcapping"];
    for (double& v : logits) v = std::tanh(v / cap) * cap;
  }
  return logits;
}

ScratchDir::ScratchDir() {
  std::string templ = (fs::temp_directory_path() / "fd-dflash-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace flashdraft::model::testing
