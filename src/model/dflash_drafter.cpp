#include "model/dflash_drafter.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/error.h"
#include "model/activation_buffers.h"
#include "model/rope_scaling.h"
#include "ops/ops.h"

namespace flashdraft::model {

std::unique_ptr<DFlashDrafter> DFlashDrafter::load_shards(
    const DFlashConfig& cfg, const Qwen3Model& target, ops::WeightQuant quant, const LoadProgress& progress,
    const std::function<void(DFlashDrafter&, const LoadProgress&)>& load) {
  const int size = target.shard().size;
  if (size > 1) {
    const std::string where = "the drafter's config.json: ";
    check_shardable(cfg.model, size, where, /*vocab=*/false);
    const int64_t fc_in = cfg.num_taps() * target.config().hidden_size;
    if (fc_in % size != 0)
      throw Error(where + "fc.weight's input width (" + std::to_string(cfg.num_taps()) + " taps x hidden_size " +
                  std::to_string(target.config().hidden_size) + ") is not divisible by --tensor-parallel-size " +
                  std::to_string(size));
  }
  const auto load_one = [&](const Qwen3Model& shard, const LoadProgress& part) {
    auto one = std::unique_ptr<DFlashDrafter>(new DFlashDrafter(cfg, shard));
    one->quant_ = quant;
    load(*one, part);
    one->quantize_lm_head();
    return one;
  };
  if (size == 1) return load_one(target, progress);
  std::vector<std::unique_ptr<DFlashDrafter>> shards(static_cast<size_t>(size));
  load_on_every_rank(target.rank_comms(), progress, [&](int r, const LoadProgress& part) {
    shards[static_cast<size_t>(r)] = load_one(r == 0 ? target : *target.peers()[static_cast<size_t>(r - 1)], part);
  });
  auto d = std::move(shards[0]);
  for (size_t r = 1; r < shards.size(); ++r) d->peers_.push_back(std::move(shards[r]));
  return d;
}

std::unique_ptr<DFlashDrafter> DFlashDrafter::load(const io::Checkpoint& ckpt, const io::ModelConfig& drafter_cfg,
                                                   const Qwen3Model& target, const LoadProgress& progress,
                                                   ops::WeightQuant quant) {
  return load_shards(parse_dflash_config(drafter_cfg, target.config(), ckpt.dir()), target, quant, progress,
                     [&](DFlashDrafter& d, const LoadProgress& part) {
    WeightLoader loader(d.backend_, &ckpt);
    d.declare(loader);
    loader.load(part, [](const std::string&) { return false; },
                "DFlash drafter with " + std::to_string(d.cfg_.model.num_hidden_layers) +
                    " layers (it uses the target's embedding and lm_head)");
  });
}

std::unique_ptr<DFlashDrafter> DFlashDrafter::load(const std::filesystem::path& dir, const Qwen3Model& target,
                                                   const LoadProgress& progress, ops::WeightQuant quant) {
  const auto cfg = load_drafter_model_config(dir);
  return load(io::Checkpoint::open(dir), cfg, target, progress, quant);
}

std::unique_ptr<DFlashDrafter> DFlashDrafter::load_dummy(const std::filesystem::path& dir, const Qwen3Model& target,
                                                         uint64_t seed, ops::WeightQuant quant) {
  return load_shards(parse_dflash_config(load_drafter_model_config(dir), target.config(), dir), target, quant, {},
                     [&](DFlashDrafter& d, const LoadProgress&) {
                       WeightLoader loader(d.backend_, nullptr, seed);
                       d.declare(loader);
                       loader.load({}, {}, "DFlash drafter");
                     });
}

DFlashDrafter::DFlashDrafter(DFlashConfig cfg, const Qwen3Model& target)
    : cfg_(std::move(cfg)),
      target_(target),
      backend_(target.backend()),
      geo_(LayerGeometry::of(cfg_.model, target.shard())),
      shard_(target.shard()) {
  const RopeTable rope = rope_table(cfg_.model);
  inv_freq_ = backend_.alloc_tensor(ops::DType::F32, 1, cfg_.model.head_dim / 2);
  backend_.upload(inv_freq_.t, rope.inv_freq.data(), ops::DType::F32);
  rope_ = ops::Rope{inv_freq_.t, rope.attention_factor};
}

void DFlashDrafter::quantize_lm_head() {
  if (quant_ == ops::WeightQuant::None) return;
  const ops::Tensor head = target_.lm_head_weight();
  lm_head_ = backend_.alloc_tensor(backend_.weight_dtype(), head.rows, head.cols);
  backend_.matmul_weight_rows(head, lm_head_.t);
  backend_.prepare_matmul_weight(lm_head_, quant_);
}

void DFlashDrafter::declare(WeightLoader& loader) {
  loader.quantize(quant_);
  const int64_t H = geo_.hidden, L = cfg_.model.num_hidden_layers, kv = geo_.kv_dim();
  const int64_t K = cfg_.num_taps(), Ht = target_.config().hidden_size;
  // Row-parallel: this rank's columns of the taps (write_context sums the ranks' products).
  const int64_t fc_in = shard_.count(K * Ht);
  fc_ = loader.alloc(H, fc_in);
  loader.matmul_weight(fc_);
  loader.add("fc.weight", {H, K * Ht}, fc_.t,
             "hidden_size x (" + std::to_string(K) + " taps in target_layer_ids x the target's hidden size " +
                 std::to_string(Ht) + ")",
             WeightLoader::Part{1, shard_.begin(K * Ht), fc_in});
  hidden_norm_ = loader.alloc(1, H);
  loader.add("hidden_norm.weight", {H}, hidden_norm_.t, "hidden_size");
  layers_.resize(static_cast<size_t>(L));
  // write_context projects context rows through every layer's k_proj and
  // v_proj at once: one GEMM against the stacked rows.
  kv_fused_ = loader.alloc(L * 2 * kv, H);
  loader.matmul_weight(kv_fused_);
  const int64_t kv_all = geo_.total_kv_heads * geo_.head_dim;
  const WeightLoader::Part kv_rows{0, geo_.kv_head0 * geo_.head_dim, kv};
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    declare_decoder_layer(loader, p, geo_, layers_[static_cast<size_t>(l)]);
    loader.add(p + "self_attn.k_proj.weight", {kv_all, H}, kv_fused_.t.row_slice(2 * l * kv, kv), "", kv_rows);
    loader.add(p + "self_attn.v_proj.weight", {kv_all, H}, kv_fused_.t.row_slice((2 * l + 1) * kv, kv), "", kv_rows);
  }
  norm_ = loader.alloc(1, H);
  loader.add("norm.weight", {H}, norm_.t, "hidden_size");
}

std::vector<KVLayerShape> DFlashDrafter::kv_layers() const {
  return std::vector<KVLayerShape>(static_cast<size_t>(cfg_.model.num_hidden_layers),
                                   KVLayerShape{geo_.kv_heads, cfg_.model.head_dim});
}

void DFlashDrafter::check_pool(const BatchContext& batch, const KVPool& pool, int64_t layer_offset,
                               const char* what) const {
  const std::string where = std::string("DFlashDrafter::") + what + ": ";
  const int64_t L = cfg_.model.num_hidden_layers;
  if (&pool.backend() != &backend_) throw Error(where + "the KV pool lives on another backend than the drafter");
  if (layer_offset < 0 || layer_offset + L > pool.num_layers())
    throw Error(where + "drafter layers [" + std::to_string(layer_offset) + ", " + std::to_string(layer_offset + L) +
                ") do not fit in a KV pool of " + std::to_string(pool.num_layers()) + " layers");
  for (int64_t l = 0; l < L; ++l) {
    const auto& s = pool.shape(layer_offset + l);
    if (s.kv_heads != geo_.kv_heads || s.head_dim != cfg_.model.head_dim)
      throw Error(where + "pool layer " + std::to_string(layer_offset + l) + " is " + std::to_string(s.kv_heads) +
                  " kv heads x " + std::to_string(s.head_dim) + ", but drafter layer " + std::to_string(l) + " needs " +
                  std::to_string(geo_.kv_heads) + " x " + std::to_string(cfg_.model.head_dim));
  }
  int64_t next_row = 0;
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    const auto& s = batch.seqs[i];
    const std::string seq = where + "seq " + std::to_string(i) + ": ";
    if (s.row_begin != next_row || s.n_rows < 1 || s.pos0 < 0)
      throw Error(seq + "rows must follow each other, at least one per seq, at positions >= 0 (row_begin " +
                  std::to_string(s.row_begin) + ", n_rows " + std::to_string(s.n_rows) + ", pos0 " +
                  std::to_string(s.pos0) + ")");
    next_row += s.n_rows;
    const int64_t positions = s.pos0 + s.n_rows;
    const int64_t blocks = (positions + pool.block_size() - 1) / pool.block_size();
    if (blocks > static_cast<int64_t>(s.block_table.size()))
      throw Error(seq + "its block table has " + std::to_string(static_cast<int64_t>(s.block_table.size())) +
                  " blocks, but positions up to " + std::to_string(positions - 1) + " need " + std::to_string(blocks));
    for (int64_t b = 0; b < blocks; ++b)
      if (s.block_table[static_cast<size_t>(b)] < 0 || s.block_table[static_cast<size_t>(b)] >= pool.num_blocks())
        throw Error(seq + "block table entry " + std::to_string(b) + " = " +
                    std::to_string(s.block_table[static_cast<size_t>(b)]) + " is outside the pool's " +
                    std::to_string(pool.num_blocks()) + " blocks");
  }
}

void DFlashDrafter::write_context(const ops::Tensor& taps, const BatchContext& rows, KVPool& pool,
                                  int64_t layer_offset) {
  prepare_context(rows, pool, layer_offset);
  write_context_prepared(taps, pool, layer_offset);
}

void DFlashDrafter::prepare_context(const BatchContext& rows, KVPool& pool, int64_t layer_offset,
                                    int64_t min_keys) {
  check_pool(rows, pool, layer_offset, "write_context");
  const int64_t n = rows.total_rows();
  context_rows_ = n;
  if (n == 0) return;
  ids_.assign(static_cast<size_t>(n), 0);  // no tokens: only positions and slots are read
  write_inputs_.build(backend_, rows, pool.block_size(), ids_, LogitRows::PerSeq, min_keys);
  const ops::DType dt = backend_.activation_dtype();
  grow_tensor(backend_, ctx_, dt, n, geo_.hidden);
  grow_tensor(backend_, kv_, dt, n, cfg_.model.num_hidden_layers * 2 * geo_.kv_dim());
}

void DFlashDrafter::write_context_prepared(const ops::Tensor& taps, KVPool& pool, int64_t layer_offset) {
  const int64_t n = context_rows_;
  if (n == 0) return;
  const int64_t H = geo_.hidden, L = cfg_.model.num_hidden_layers, kv = geo_.kv_dim();
  if (taps.rows != n || taps.cols != cfg_.num_taps() * target_.config().hidden_size)
    throw Error("DFlashDrafter::write_context: taps are " + std::to_string(taps.rows) + "x" +
                std::to_string(taps.cols) + ", expected " + std::to_string(n) + "x" +
                std::to_string(cfg_.num_taps() * target_.config().hidden_size));
  const ops::DType dt = backend_.activation_dtype();
  const ops::Tensor ctx = grow_tensor(backend_, ctx_, dt, n, H);
  const ops::Tensor kvs = grow_tensor(backend_, kv_, dt, n, L * 2 * kv);

  // ctx = hidden_norm(fc(taps)), shared by every layer; then all layers' K/V in one GEMM.
  if (shard_.active()) {
    backend_.matmul(taps.col_slice(shard_.begin(taps.cols), fc_.t.cols), fc_.t, nullptr, ctx);
    shard_.comm->all_reduce_sum(backend_, ctx);
  } else {
    backend_.matmul(taps, fc_.t, nullptr, ctx);
  }
  backend_.rmsnorm(ctx, hidden_norm_.t, ctx, geo_.eps);
  backend_.matmul(ctx, kv_fused_.t, nullptr, kvs);
  for (int64_t l = 0; l < L; ++l) {
    const auto& w = layers_[static_cast<size_t>(l)];
    backend_.rope_store_kv(kvs.col_slice(2 * l * kv, 2 * kv), 0, geo_.kv_heads, geo_.head_dim, nullptr,
                           geo_.qk_norm ? &w.k_norm.t : nullptr, write_inputs_.attn().positions, rope_, geo_.eps,
                           write_inputs_.attn().slots, pool.k(layer_offset + l), pool.v(layer_offset + l));
  }
}

void DFlashDrafter::write_context(const float* taps, const BatchContext& rows, KVPool& pool, int64_t layer_offset) {
  const int64_t n = rows.total_rows(), width = cfg_.num_taps() * target_.config().hidden_size;
  if (n == 0) return;
  const ops::Tensor t = grow_tensor(backend_, host_taps_, backend_.activation_dtype(), n, width);
  backend_.upload(t, taps, ops::DType::F32);
  write_context(t, rows, pool, layer_offset);
}

void DFlashDrafter::run(std::span<const int32_t> anchors, const BatchContext& blocks, KVPool& pool,
                        int64_t layer_offset) {
  prepare(anchors, blocks, pool, layer_offset);
  forward_prepared(pool, layer_offset);
}

void DFlashDrafter::reserve(const BatchLimits& limits) {
  const int64_t rows = limits.rows;
  const ops::DType dt = backend_.activation_dtype();
  inputs_.reserve(backend_, limits);
  acts_.reserve(backend_, geo_, rows);
  grow_tensor(backend_, selected_, dt, rows, geo_.hidden);
  grow_tensor(backend_, logits_, ops::DType::F32, rows, target_.vocab_count());
  reserve_context_writes(limits);
}

void DFlashDrafter::reserve_context_writes(const BatchLimits& limits) {
  const ops::DType dt = backend_.activation_dtype();
  write_inputs_.reserve(backend_, limits);
  grow_tensor(backend_, ctx_, dt, limits.rows, geo_.hidden);
  grow_tensor(backend_, kv_, dt, limits.rows, cfg_.model.num_hidden_layers * 2 * geo_.kv_dim());
}

int64_t DFlashDrafter::context_write_row_bytes() const {
  const auto act = static_cast<int64_t>(ops::dtype_size(backend_.activation_dtype()));
  // ctx and every layer's K/V; ids, positions, slots and a logit row (i32).
  return act * (geo_.hidden + cfg_.model.num_hidden_layers * 2 * geo_.kv_dim()) + 4 * 4;
}

void DFlashDrafter::prepare(std::span<const int32_t> anchors, const BatchContext& blocks, KVPool& pool,
                            int64_t layer_offset, int64_t min_keys) {
  if (anchors.size() != blocks.seqs.size())
    throw Error("DFlashDrafter::draft: " + std::to_string(static_cast<int64_t>(anchors.size())) + " anchors for " +
                std::to_string(static_cast<int64_t>(blocks.seqs.size())) + " seqs");
  for (size_t i = 0; i < blocks.seqs.size(); ++i)
    if (blocks.seqs[i].n_rows > cfg_.block_size)
      throw Error("DFlashDrafter::draft: seq " + std::to_string(i) + " has " + std::to_string(blocks.seqs[i].n_rows) +
                  " block rows, more than the drafter's block_size " + std::to_string(cfg_.block_size));
  check_pool(blocks, pool, layer_offset, "draft");
  const int64_t n = blocks.total_rows(), V = target_.config().vocab_size;
  for (size_t i = 0; i < anchors.size(); ++i)
    if (anchors[i] < 0 || anchors[i] >= V)
      throw Error("DFlashDrafter::draft: anchor " + std::to_string(anchors[i]) + " is outside the vocabulary [0, " +
                  std::to_string(V) + ")");
  logits_view_ = ops::Tensor{};
  rows_ = n;
  if (n == 0) return;
  ids_.resize(static_cast<size_t>(n));
  for (size_t i = 0; i < blocks.seqs.size(); ++i) {
    const auto& s = blocks.seqs[i];
    for (int64_t r = 0; r < s.n_rows; ++r)
      ids_[static_cast<size_t>(s.row_begin + r)] = r == 0 ? anchors[i] : cfg_.mask_token_id;
  }
  inputs_.build(backend_, blocks, pool.block_size(), ids_, LogitRows::BlockTail, min_keys);
  acts_.reserve(backend_, geo_, n);
  const int64_t m = inputs_.num_logit_rows();
  if (m == 0) return;
  selected_view_ = grow_tensor(backend_, selected_, backend_.activation_dtype(), m, geo_.hidden);
  logits_view_ = grow_tensor(backend_, logits_, ops::DType::F32, m, target_.vocab_count());
}

void DFlashDrafter::forward_prepared(KVPool& pool, int64_t layer_offset) {
  const int64_t n = rows_;
  if (n == 0) return;
  const float scale = cfg_.input_embedding_scale ? static_cast<float>(*cfg_.input_embedding_scale) : 1.0f;
  target_.embed(inputs_.ids(), acts_.x.t.row_slice(0, n), scale);

  const int64_t L = cfg_.model.num_hidden_layers;
  for (int64_t l = 0; l < L; ++l) {
    const auto& kind = cfg_.layers[static_cast<size_t>(l)];
    const ops::AttentionMask mask{kind.causal, kind.window};
    const auto& w = layers_[static_cast<size_t>(l)];
    begin_layer(backend_, w.input_norm.t, geo_.eps, acts_, n, /*pending=*/l > 0);
    decoder_layer(backend_, w, geo_, acts_, n, inputs_.attn(), mask, pool.k(layer_offset + l),
                  pool.v(layer_offset + l), rope_, shard_);
  }
  begin_layer(backend_, norm_.t, geo_.eps, acts_, n, /*pending=*/true);

  // Block rows 1.. of every seq (row 0, the anchor, predicts nothing new).
  if (logits_view_.empty()) return;
  backend_.gather_rows(acts_.xn.t.row_slice(0, n), inputs_.logit_rows().as<int32_t>(), selected_view_);
  if (lm_head_.t.empty())
    target_.lm_head(selected_view_, logits_view_);
  else
    backend_.matmul(selected_view_, lm_head_.t, nullptr, logits_view_);
  if (cfg_.final_logit_softcapping) backend_.softcap(logits_view_, static_cast<float>(*cfg_.final_logit_softcapping));
}

void DFlashDrafter::draft(std::span<const int32_t> anchors, const BatchContext& blocks, KVPool& pool,
                          int64_t layer_offset, std::vector<float>& logits) {
  run(anchors, blocks, pool, layer_offset);
  logits.resize(static_cast<size_t>(logits_view_.numel()));
  if (!logits.empty()) backend_.download(logits_view_, logits.data());
}

void DFlashDrafter::draft_contiguous(const float* taps, int64_t n_ctx, int32_t anchor, int64_t block_len,
                                     std::vector<float>& logits) {
  constexpr int64_t kBlock = 16;
  const int64_t blocks = std::max<int64_t>(1, (n_ctx + block_len + kBlock - 1) / kBlock);
  KVPool pool(backend_, blocks, kBlock, kv_layers());
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
