#include "model/dflash_drafter.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>

#include "core/error.h"
#include "io/tensor_view.h"
#include "model/activation_buffers.h"
#include "ops/ops.h"

namespace flashdraft::model {

namespace cpu = ops::cpu;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

struct Decl {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float>* dest;
  std::string why;  // where the expected shape comes from, for the error message
};

}  // namespace

std::unique_ptr<DFlashDrafter> DFlashDrafter::load(const io::Checkpoint& ckpt, const io::ModelConfig& drafter_cfg,
                                                   const Qwen3Model& target, const LoadProgress& progress) {
  auto d = std::unique_ptr<DFlashDrafter>(
      new DFlashDrafter(parse_dflash_config(drafter_cfg, target.config(), ckpt.dir()), target));
  d->load_weights(ckpt, progress);
  return d;
}

std::unique_ptr<DFlashDrafter> DFlashDrafter::load(const std::filesystem::path& dir, const Qwen3Model& target,
                                                   const LoadProgress& progress) {
  const auto cfg = load_drafter_model_config(dir);
  return load(io::Checkpoint::open(dir), cfg, target, progress);
}

DFlashDrafter::DFlashDrafter(DFlashConfig cfg, const Qwen3Model& target)
    : cfg_(std::move(cfg)), target_(target), inv_freq_(static_cast<size_t>(cfg_.model.head_dim / 2)) {
  cpu::rope_inv_freq(cfg_.model.rope_theta, cfg_.model.head_dim, inv_freq_.data());
}

void DFlashDrafter::load_weights(const io::Checkpoint& ckpt, const LoadProgress& progress) {
  const auto& m = cfg_.model;
  const int64_t H = m.hidden_size, I = m.intermediate_size, hd = m.head_dim, L = m.num_hidden_layers;
  const int64_t q_dim = m.num_attention_heads * hd, kv_dim = m.num_key_value_heads * hd;
  const int64_t K = cfg_.num_taps(), Ht = target_.config().hidden_size;
  const std::string heads = "num_attention_heads " + str(m.num_attention_heads) + " x head_dim " + str(hd);
  const std::string kv_heads = "num_key_value_heads " + str(m.num_key_value_heads) + " x head_dim " + str(hd);

  std::vector<Decl> decls;
  decls.push_back(
      {"fc.weight",
       {H, K * Ht},
       &fc_,
       "hidden_size x (" + str(K) + " taps in target_layer_ids x the target's hidden size " + str(Ht) + ")"});
  decls.push_back({"hidden_norm.weight", {H}, &hidden_norm_, "hidden_size"});
  layers_.resize(static_cast<size_t>(L));
  for (int64_t i = 0; i < L; ++i) {
    auto& w = layers_[static_cast<size_t>(i)];
    const std::string p = "layers." + str(i) + ".";
    decls.push_back({p + "input_layernorm.weight", {H}, &w.input_layernorm, "hidden_size"});
    decls.push_back({p + "post_attention_layernorm.weight", {H}, &w.post_attention_layernorm, "hidden_size"});
    decls.push_back({p + "self_attn.q_proj.weight", {q_dim, H}, &w.q_proj, heads + ", hidden_size"});
    decls.push_back({p + "self_attn.k_proj.weight", {kv_dim, H}, &w.k_proj, kv_heads + ", hidden_size"});
    decls.push_back({p + "self_attn.v_proj.weight", {kv_dim, H}, &w.v_proj, kv_heads + ", hidden_size"});
    decls.push_back({p + "self_attn.o_proj.weight", {H, q_dim}, &w.o_proj, "hidden_size, " + heads});
    if (m.qk_norm) {
      decls.push_back({p + "self_attn.q_norm.weight", {hd}, &w.q_norm, "head_dim"});
      decls.push_back({p + "self_attn.k_norm.weight", {hd}, &w.k_norm, "head_dim"});
    }
    decls.push_back({p + "mlp.gate_proj.weight", {I, H}, &w.gate_proj, "intermediate_size, hidden_size"});
    decls.push_back({p + "mlp.up_proj.weight", {I, H}, &w.up_proj, "intermediate_size, hidden_size"});
    decls.push_back({p + "mlp.down_proj.weight", {H, I}, &w.down_proj, "hidden_size, intermediate_size"});
  }
  decls.push_back({"norm.weight", {H}, &norm_, "hidden_size"});

  const std::string dir = ckpt.dir().string();
  std::set<std::string> declared;
  for (const auto& d : decls) declared.insert(d.name);
  for (const auto& name : ckpt.names())
    if (!declared.count(name))
      throw Error(dir + ": tensor '" + name + "' has no place in a DFlash drafter with " + str(L) +
                  " layers as config.json describes it (the drafter uses the target's embedding and lm_head)");

  size_t total = 0, done = 0;
  for (const auto& d : decls) {
    const auto& t = ckpt.get(d.name);  // names a missing tensor
    if (t.shape != d.shape)
      throw Error(dir + ": tensor '" + d.name + "' is " + io::shape_to_string(t.shape) + ", expected " +
                  io::shape_to_string(d.shape) + " (" + d.why + ")");
    total += t.nbytes;
  }
  if (progress) progress(0, total);
  for (const auto& d : decls) {
    *d.dest = ckpt.load_f32(d.name, d.shape);
    done += ckpt.get(d.name).nbytes;
    if (progress) progress(done, total);
  }

  // write_context projects context rows through every layer's k_proj and
  // v_proj at once: one GEMM against the stacked rows.
  kv_fused_.resize(static_cast<size_t>(L * 2 * kv_dim * H));
  for (int64_t l = 0; l < L; ++l) {
    const auto& w = layers_[static_cast<size_t>(l)];
    std::copy(w.k_proj.begin(), w.k_proj.end(), kv_fused_.begin() + (2 * l) * kv_dim * H);
    std::copy(w.v_proj.begin(), w.v_proj.end(), kv_fused_.begin() + (2 * l + 1) * kv_dim * H);
  }
}

std::vector<KVLayerShape> DFlashDrafter::kv_layers() const {
  return std::vector<KVLayerShape>(static_cast<size_t>(cfg_.model.num_hidden_layers),
                                   KVLayerShape{cfg_.model.num_key_value_heads, cfg_.model.head_dim});
}

void DFlashDrafter::check_pool(const BatchContext& batch, const KVPool& pool, int64_t layer_offset, bool writes_rows,
                               const char* what) const {
  const std::string where = std::string("DFlashDrafter::") + what + ": ";
  const int64_t L = cfg_.model.num_hidden_layers;
  if (layer_offset < 0 || layer_offset + L > pool.num_layers())
    throw Error(where + "drafter layers [" + str(layer_offset) + ", " + str(layer_offset + L) +
                ") do not fit in a KV pool of " + str(pool.num_layers()) + " layers");
  for (int64_t l = 0; l < L; ++l) {
    const auto& s = pool.shape(layer_offset + l);
    if (s.kv_heads != cfg_.model.num_key_value_heads || s.head_dim != cfg_.model.head_dim)
      throw Error(where + "pool layer " + str(layer_offset + l) + " is " + str(s.kv_heads) + " kv heads x " +
                  str(s.head_dim) + ", but drafter layer " + str(l) + " needs " + str(cfg_.model.num_key_value_heads) +
                  " x " + str(cfg_.model.head_dim));
  }
  int64_t next_row = 0;
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    const auto& s = batch.seqs[i];
    const std::string seq = where + "seq " + std::to_string(i) + ": ";
    if (s.row_begin != next_row || s.n_rows < 1 || s.pos0 < 0)
      throw Error(seq + "rows must follow each other, at least one per seq, at positions >= 0 (row_begin " +
                  str(s.row_begin) + ", n_rows " + str(s.n_rows) + ", pos0 " + str(s.pos0) + ")");
    next_row += s.n_rows;
    const int64_t positions = writes_rows ? s.pos0 + s.n_rows : s.pos0;
    const int64_t blocks = (positions + pool.block_size() - 1) / pool.block_size();
    if (blocks > static_cast<int64_t>(s.block_table.size()))
      throw Error(seq + "its block table has " + str(static_cast<int64_t>(s.block_table.size())) +
                  " blocks, but positions up to " + str(positions - 1) + " need " + str(blocks));
    for (int64_t b = 0; b < blocks; ++b)
      if (s.block_table[static_cast<size_t>(b)] < 0 || s.block_table[static_cast<size_t>(b)] >= pool.num_blocks())
        throw Error(seq + "block table entry " + str(b) + " = " + str(s.block_table[static_cast<size_t>(b)]) +
                    " is outside the pool's " + str(pool.num_blocks()) + " blocks");
  }
}

void DFlashDrafter::grow(int64_t n) {
  const auto& m = cfg_.model;
  const int64_t q_dim = m.num_attention_heads * m.head_dim, kv_dim = m.num_key_value_heads * m.head_dim;
  grow_rows(x_, n, m.hidden_size);
  grow_rows(xn_, n, m.hidden_size);
  grow_rows(proj_, n, m.hidden_size);
  grow_rows(q_, n, q_dim);
  grow_rows(attn_, n, q_dim);
  grow_rows(kb_, n, kv_dim);
  grow_rows(vb_, n, kv_dim);
  grow_rows(gate_, n, m.intermediate_size);
  grow_rows(up_, n, m.intermediate_size);
  ids_.resize(static_cast<size_t>(n));
  positions_.resize(static_cast<size_t>(n));
}

void DFlashDrafter::write_context(const float* taps, const BatchContext& rows, KVPool& pool, int64_t layer_offset) {
  check_pool(rows, pool, layer_offset, /*writes_rows=*/true, "write_context");
  const int64_t n = rows.total_rows();
  if (n == 0) return;
  const auto& m = cfg_.model;
  const int64_t H = m.hidden_size, L = m.num_hidden_layers, hd = m.head_dim, nkv = m.num_key_value_heads;
  const int64_t kv_dim = nkv * hd, width = L * 2 * kv_dim;
  const int64_t in = cfg_.num_taps() * target_.config().hidden_size;
  const float eps = static_cast<float>(m.rms_norm_eps);
  if (ctx_.size() < static_cast<size_t>(n * H)) ctx_.resize(static_cast<size_t>(n * H));
  if (kv_.size() < static_cast<size_t>(n * width)) kv_.resize(static_cast<size_t>(n * width));

  // ctx = hidden_norm(fc(taps)), shared by every layer; then all layers' K/V in one GEMM.
  cpu::matmul_wt(taps, fc_.data(), nullptr, ctx_.data(), n, in, H);
  cpu::rmsnorm(ctx_.data(), hidden_norm_.data(), ctx_.data(), n, H, eps);
  cpu::matmul_wt(ctx_.data(), kv_fused_.data(), nullptr, kv_.data(), n, H, width);

  for (const auto& s : rows.seqs)
    for (int64_t i = 0; i < s.n_rows; ++i) {
      const int64_t pos = s.pos0 + i;
      const int64_t slot = slot_of(s.block_table, pool.block_size(), pos);
      const float* src = kv_.data() + (s.row_begin + i) * width;
      for (int64_t l = 0; l < L; ++l) {
        float* k = pool.k(layer_offset + l) + slot * kv_dim;
        std::copy_n(src + 2 * l * kv_dim, kv_dim, k);
        std::copy_n(src + (2 * l + 1) * kv_dim, kv_dim, pool.v(layer_offset + l) + slot * kv_dim);
        if (m.qk_norm) cpu::rmsnorm(k, layers_[static_cast<size_t>(l)].k_norm.data(), k, nkv, hd, eps);
        cpu::rope_neox(k, &pos, inv_freq_.data(), 1, nkv, hd);
      }
    }
}

void DFlashDrafter::draft(std::span<const int32_t> anchors, const BatchContext& blocks, KVPool& pool,
                          int64_t layer_offset, std::vector<float>& logits) {
  if (anchors.size() != blocks.seqs.size())
    throw Error("DFlashDrafter::draft: " + str(static_cast<int64_t>(anchors.size())) + " anchors for " +
                str(static_cast<int64_t>(blocks.seqs.size())) + " seqs");
  for (size_t i = 0; i < blocks.seqs.size(); ++i)
    if (blocks.seqs[i].n_rows > cfg_.block_size)
      throw Error("DFlashDrafter::draft: seq " + std::to_string(i) + " has " + str(blocks.seqs[i].n_rows) +
                  " block rows, more than the drafter's block_size " + str(cfg_.block_size));
  check_pool(blocks, pool, layer_offset, /*writes_rows=*/false, "draft");
  const auto& m = cfg_.model;
  const int64_t n = blocks.total_rows(), H = m.hidden_size, V = target_.config().vocab_size;
  logits.clear();
  if (n == 0) return;
  grow(n);
  for (size_t i = 0; i < blocks.seqs.size(); ++i) {
    const auto& s = blocks.seqs[i];
    for (int64_t r = 0; r < s.n_rows; ++r) {
      ids_[static_cast<size_t>(s.row_begin + r)] = r == 0 ? anchors[i] : cfg_.mask_token_id;
      positions_[static_cast<size_t>(s.row_begin + r)] = s.pos0 + r;
    }
  }
  target_.embed(std::span<const int32_t>(ids_.data(), static_cast<size_t>(n)), x_.data());
  if (cfg_.input_embedding_scale) {
    const float scale = static_cast<float>(*cfg_.input_embedding_scale);
    for (int64_t i = 0; i < n * H; ++i) x_[static_cast<size_t>(i)] *= scale;
  }

  for (int64_t l = 0; l < m.num_hidden_layers; ++l) {
    attention_block(l, blocks, pool, layer_offset, n);
    mlp_block(l, n);
  }

  // Final norm on block rows 1.. of every seq (row 0, the anchor, predicts nothing new).
  int64_t out_rows = 0;
  for (const auto& s : blocks.seqs) {
    cpu::rmsnorm(x_.data() + (s.row_begin + 1) * H, norm_.data(), xn_.data() + out_rows * H, s.n_rows - 1, H,
                 static_cast<float>(m.rms_norm_eps));
    out_rows += s.n_rows - 1;
  }
  if (out_rows == 0) return;
  logits.resize(static_cast<size_t>(out_rows * V));
  target_.lm_head(xn_.data(), out_rows, logits.data());
  if (cfg_.final_logit_softcapping) {
    const double cap = *cfg_.final_logit_softcapping;
    for (float& v : logits) v = static_cast<float>(std::tanh(v / cap) * cap);
  }
}

void DFlashDrafter::attention_block(int64_t layer, const BatchContext& blocks, const KVPool& pool, int64_t layer_offset,
                                    int64_t n) {
  const auto& w = layers_[static_cast<size_t>(layer)];
  const auto& kind = cfg_.layers[static_cast<size_t>(layer)];
  const auto& m = cfg_.model;
  const int64_t H = m.hidden_size, hd = m.head_dim, nh = m.num_attention_heads, nkv = m.num_key_value_heads;
  const float eps = static_cast<float>(m.rms_norm_eps);

  // The block's own q/k/v; context K/V come from the pool (written by write_context).
  cpu::rmsnorm(x_.data(), w.input_layernorm.data(), xn_.data(), n, H, eps);
  cpu::matmul_wt(xn_.data(), w.q_proj.data(), nullptr, q_.data(), n, H, nh * hd);
  cpu::matmul_wt(xn_.data(), w.k_proj.data(), nullptr, kb_.data(), n, H, nkv * hd);
  cpu::matmul_wt(xn_.data(), w.v_proj.data(), nullptr, vb_.data(), n, H, nkv * hd);
  if (m.qk_norm) {
    cpu::rmsnorm(q_.data(), w.q_norm.data(), q_.data(), n * nh, hd, eps);
    cpu::rmsnorm(kb_.data(), w.k_norm.data(), kb_.data(), n * nkv, hd, eps);
  }
  cpu::rope_neox(q_.data(), positions_.data(), inv_freq_.data(), n, nh, hd);
  cpu::rope_neox(kb_.data(), positions_.data(), inv_freq_.data(), n, nkv, hd);

  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  for (const auto& s : blocks.seqs)
    cpu::dflash_attention(q_.data() + s.row_begin * nh * hd, kb_.data() + s.row_begin * nkv * hd,
                          vb_.data() + s.row_begin * nkv * hd, pool.k(layer_offset + layer),
                          pool.v(layer_offset + layer), s.block_table.data(), pool.block_size(), s.pos0,
                          attn_.data() + s.row_begin * nh * hd, s.n_rows, nh, nkv, hd, scale, kind.causal, kind.window);
  cpu::matmul_wt(attn_.data(), w.o_proj.data(), nullptr, proj_.data(), n, nh * hd, H);
  cpu::add(x_.data(), proj_.data(), n * H);
}

void DFlashDrafter::mlp_block(int64_t layer, int64_t n) {
  const auto& w = layers_[static_cast<size_t>(layer)];
  const auto& m = cfg_.model;
  const int64_t H = m.hidden_size, I = m.intermediate_size;
  cpu::rmsnorm(x_.data(), w.post_attention_layernorm.data(), xn_.data(), n, H, static_cast<float>(m.rms_norm_eps));
  cpu::matmul_wt(xn_.data(), w.gate_proj.data(), nullptr, gate_.data(), n, H, I);
  cpu::matmul_wt(xn_.data(), w.up_proj.data(), nullptr, up_.data(), n, H, I);
  cpu::silu_glu(gate_.data(), up_.data(), gate_.data(), n * I);
  cpu::matmul_wt(gate_.data(), w.down_proj.data(), nullptr, proj_.data(), n, I, H);
  cpu::add(x_.data(), proj_.data(), n * H);
}

void DFlashDrafter::draft_contiguous(const float* taps, int64_t n_ctx, int32_t anchor, int64_t block_len,
                                     std::vector<float>& logits) {
  constexpr int64_t kBlock = 16;
  const int64_t blocks = std::max<int64_t>(1, (n_ctx + block_len + kBlock - 1) / kBlock);
  KVPool pool(blocks, kBlock, kv_layers());
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  if (n_ctx > 0) {
    BatchContext ctx;
    ctx.seqs.push_back(SeqSlice{0, n_ctx, 0, table, false});
    write_context(taps, ctx, pool, 0);
  }
  BatchContext block;
  block.seqs.push_back(SeqSlice{0, block_len, n_ctx, table, true});
  draft(std::span<const int32_t>(&anchor, 1), block, pool, 0, logits);
}

}  // namespace flashdraft::model
