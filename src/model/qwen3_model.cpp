#include "model/qwen3_model.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "model/activation_buffers.h"
#include "model/rope_scaling.h"
#include "ops/ops.h"

namespace flashdraft::model {
namespace {

std::string describe(const io::ModelConfig& cfg) {
  return cfg.model_type + " model with " + std::to_string(cfg.num_hidden_layers) +
         " layers, attention_bias=" + (cfg.attention_bias ? "true" : "false") +
         ", q/k norms=" + (cfg.qk_norm ? "yes" : "no") +
         ", tie_word_embeddings=" + (cfg.tie_word_embeddings ? "true" : "false");
}

bool ignorable(const std::string& name, const io::ModelConfig& cfg) {
  // transformers ties lm_head to the embedding even when a file carries both;
  // some old exports also saved the (recomputed) rotary buffer.
  if (cfg.tie_word_embeddings && name == "lm_head.weight") return true;
  const std::string rotary = "rotary_emb.inv_freq";
  return name.size() >= rotary.size() && name.compare(name.size() - rotary.size(), rotary.size(), rotary) == 0;
}

void check_geometry(const io::ModelConfig& cfg, const std::string& where) {
  if (cfg.num_key_value_heads <= 0 || cfg.num_attention_heads % cfg.num_key_value_heads != 0)
    throw Error(where + "num_attention_heads (" + std::to_string(cfg.num_attention_heads) +
                ") must be a multiple of num_key_value_heads (" + std::to_string(cfg.num_key_value_heads) + ")");
  if (cfg.head_dim <= 0 || cfg.head_dim % 2 != 0)
    throw Error(where + "head_dim must be positive and even for RoPE, found " + std::to_string(cfg.head_dim));
}

std::shared_ptr<ops::Backend> or_cpu(std::shared_ptr<ops::Backend> backend) {
  return backend ? std::move(backend) : std::shared_ptr<ops::Backend>(ops::make_cpu_backend());
}

}  // namespace

std::unique_ptr<Qwen3Model> Qwen3Model::load(const io::Checkpoint& ckpt, const io::ModelConfig& cfg,
                                             const LoadProgress& progress, std::shared_ptr<ops::Backend> backend) {
  check_geometry(cfg, ckpt.dir().string() + "/config.json: ");
  auto m = std::unique_ptr<Qwen3Model>(new Qwen3Model(cfg, or_cpu(std::move(backend))));
  WeightLoader loader(*m->backend_, &ckpt);
  m->declare(loader);
  loader.load(progress, [&](const std::string& n) { return ignorable(n, cfg); }, describe(cfg));
  return m;
}

std::unique_ptr<Qwen3Model> Qwen3Model::load_dummy(const io::ModelConfig& cfg, std::shared_ptr<ops::Backend> backend,
                                                   uint64_t seed) {
  check_geometry(cfg, "config.json: ");
  auto m = std::unique_ptr<Qwen3Model>(new Qwen3Model(cfg, or_cpu(std::move(backend))));
  WeightLoader loader(*m->backend_, nullptr, seed);
  m->declare(loader);
  loader.load({}, {}, describe(cfg));
  return m;
}

std::unique_ptr<Qwen3Model> Qwen3Model::load_sharded(const io::Checkpoint* ckpt, const io::ModelConfig& cfg,
                                                     std::vector<std::shared_ptr<ops::Backend>> backends,
                                                     std::vector<std::unique_ptr<parallel::Communicator>> group,
                                                     const LoadProgress& progress, uint64_t seed) {
  const auto size = static_cast<int>(group.size());
  if (size < 1 || backends.size() != group.size())
    throw Error("load_sharded: " + std::to_string(backends.size()) + " backends for " + std::to_string(size) +
                " ranks");
  const std::string where = (ckpt ? ckpt->dir().string() + "/" : std::string()) + "config.json: ";
  check_geometry(cfg, where);
  check_shardable(cfg, size, where, /*vocab=*/true);
  std::vector<std::unique_ptr<Qwen3Model>> shards(static_cast<size_t>(size));
  std::vector<parallel::Communicator*> comms;
  for (const auto& c : group) comms.push_back(c.get());
  load_on_every_rank(comms, progress, [&](int r, const LoadProgress& part) {
    const auto i = static_cast<size_t>(r);
    auto m = std::unique_ptr<Qwen3Model>(new Qwen3Model(cfg, backends[i], Shard::of(comms[i])));
    WeightLoader loader(*m->backend_, ckpt, seed);
    m->declare(loader);
    loader.load(part, [&](const std::string& n) { return ignorable(n, cfg); }, describe(cfg));
    shards[i] = std::move(m);
  });
  auto root = std::move(shards[0]);
  for (size_t r = 1; r < shards.size(); ++r) root->peers_.push_back(std::move(shards[r]));
  root->group_ = std::move(group);
  return root;
}

std::vector<parallel::Communicator*> Qwen3Model::rank_comms() const {
  std::vector<parallel::Communicator*> comms{shard_.comm};
  for (const auto& peer : peers_) comms.push_back(peer->shard().comm);
  return comms;
}

Qwen3Model::Qwen3Model(io::ModelConfig cfg, std::shared_ptr<ops::Backend> backend, Shard shard)
    : cfg_(std::move(cfg)), backend_(std::move(backend)), shard_(shard), geo_(LayerGeometry::of(cfg_, shard_)) {
  const RopeTable rope = rope_table(cfg_);
  inv_freq_ = backend_->alloc_tensor(ops::DType::F32, 1, cfg_.head_dim / 2);
  backend_->upload(inv_freq_.t, rope.inv_freq.data(), ops::DType::F32);
  rope_ = ops::Rope{inv_freq_.t, rope.attention_factor};
}

void Qwen3Model::declare(WeightLoader& loader) {
  const int64_t H = cfg_.hidden_size, V = cfg_.vocab_size, Vr = vocab_count(), v0 = vocab_begin();
  const WeightLoader::Part vocab_rows{0, v0, Vr};
  if (shard_.active()) {
    // This rank's rows, then a zero row that the other ranks' tokens look up.
    embed_tokens_ = loader.alloc(Vr + 1, H);
    backend_->upload(embed_tokens_.t.row_slice(Vr, 1), std::vector<float>(static_cast<size_t>(H), 0.0f).data(),
                     ops::DType::F32);
    std::vector<int32_t> map(static_cast<size_t>(V), static_cast<int32_t>(Vr));
    for (int64_t v = v0; v < v0 + Vr; ++v) map[static_cast<size_t>(v)] = static_cast<int32_t>(v - v0);
    vocab_map_ = backend_->alloc_tensor(ops::DType::I32, V, 1);
    backend_->upload(vocab_map_.t, map.data(), ops::DType::I32);
  } else {
    embed_tokens_ = loader.alloc(V, H);
  }
  loader.add("model.embed_tokens.weight", {V, H}, embed_tokens_.t.row_slice(0, Vr), "vocab_size, hidden_size",
             vocab_rows);
  layers_.resize(static_cast<size_t>(cfg_.num_hidden_layers));
  for (int64_t i = 0; i < cfg_.num_hidden_layers; ++i)
    declare_decoder_layer(loader, "model.layers." + std::to_string(i) + ".", geo_, layers_[static_cast<size_t>(i)]);
  norm_ = loader.alloc(1, H);
  loader.add("model.norm.weight", {H}, norm_.t, "hidden_size");
  if (!cfg_.tie_word_embeddings) {
    lm_head_ = loader.alloc(Vr, H);
    loader.matmul_weight(lm_head_);
    loader.add("lm_head.weight", {V, H}, lm_head_.t, "vocab_size, hidden_size", vocab_rows);
  }
}

KVCache Qwen3Model::new_cache() const { return KVCache(*backend_, kv_layers()); }

std::vector<KVLayerShape> Qwen3Model::kv_layers() const {
  return std::vector<KVLayerShape>(static_cast<size_t>(cfg_.num_hidden_layers),
                                   KVLayerShape{geo_.kv_heads, cfg_.head_dim});
}

void Qwen3Model::embed(const ops::Tensor& ids, const ops::Tensor& out, float scale) const {
  if (!shard_.active()) return backend_->embedding(embed_tokens_.t, ids, out, scale);
  // Each rank looks its rows up (zeros for the others' tokens); the sum adds
  // exactly one non-zero per element, so it is exact.
  const ops::Tensor local = grow_tensor(*backend_, local_ids_, ops::DType::I32, ids.rows, 1);
  backend_->gather_rows(vocab_map_.t, ids.as<int32_t>(), local);
  backend_->embedding(embed_tokens_.t, local, out, scale);
  shard_.comm->all_reduce_sum(*backend_, out);
}

void Qwen3Model::lm_head(const ops::Tensor& x, const ops::Tensor& logits) const {
  backend_->matmul(x, lm_head_weight(), nullptr, logits);
}

ops::Tensor Qwen3Model::lm_head_weight() const {
  return lm_head_.t.empty() ? embed_tokens_.t.row_slice(0, vocab_count()) : lm_head_.t;
}

void Qwen3Model::argmax(const ops::Tensor& logits, const ops::Tensor& out) {
  if (!shard_.active()) return backend_->argmax(logits, out);
  if (logits.rows == 0) return;
  const ops::Tensor keys = grow_tensor(*backend_, keys_, ops::DType::I32, logits.rows, 2);
  backend_->argmax_key(logits, vocab_begin(), keys);
  shard_.comm->all_reduce_min_u64(*backend_, keys);
  backend_->copy(keys.col_slice(0, 1), out);
}

void Qwen3Model::gather_logits() {
  if (!shard_.active() || logits_view_.empty()) return;
  ops::Backend& be = *backend_;
  const int64_t m = logits_view_.rows, Vr = logits_view_.cols;
  const ops::Tensor all = grow_tensor(be, gathered_, ops::DType::F32, shard_.size * m, Vr);
  shard_.comm->all_gather(be, logits_view_, all);
  const ops::Tensor full = grow_tensor(be, full_logits_, ops::DType::F32, m, cfg_.vocab_size);
  for (int r = 0; r < shard_.size; ++r) be.copy(all.row_slice(r * m, m), full.col_slice(r * Vr, Vr));
  logits_view_ = full;
}

void Qwen3Model::require_one_rank(const char* what) const {
  if (shard_.active())
    throw Error(std::string(what) + ": a tensor-parallel shard runs only under the engine, which drives every rank");
}

void Qwen3Model::check_ids(std::span<const int32_t> tokens) const {
  for (size_t r = 0; r < tokens.size(); ++r)
    if (tokens[r] < 0 || tokens[r] >= cfg_.vocab_size)
      throw Error("token id " + std::to_string(tokens[r]) + " at position " + std::to_string(r) +
                  " is outside the model's vocabulary [0, " + std::to_string(cfg_.vocab_size) + ")");
}

void Qwen3Model::embed(std::span<const int32_t> ids, float* out) const {
  require_one_rank("Qwen3Model::embed");
  check_ids(ids);
  const auto n = static_cast<int64_t>(ids.size());
  auto dev_ids = backend_->alloc_tensor(ops::DType::I32, n, 1);
  backend_->upload(dev_ids.t, ids.data(), ops::DType::I32);
  auto x = backend_->alloc_tensor(backend_->activation_dtype(), n, cfg_.hidden_size);
  embed(dev_ids.t, x.t);
  backend_->download(x.t, out);
}

void Qwen3Model::lm_head(const float* x, int64_t n, float* logits) const {
  require_one_rank("Qwen3Model::lm_head");
  auto dx = backend_->alloc_tensor(backend_->activation_dtype(), n, cfg_.hidden_size);
  backend_->upload(dx.t, x, ops::DType::F32);
  auto dl = backend_->alloc_tensor(ops::DType::F32, n, cfg_.vocab_size);
  lm_head(dx.t, dl.t);
  backend_->download(dl.t, logits);
}

void Qwen3Model::set_tap_layers(std::vector<int64_t> layer_ids) {
  for (size_t i = 0; i < layer_ids.size(); ++i) {
    const int64_t id = layer_ids[i];
    if (id < 0 || id >= cfg_.num_hidden_layers)
      throw Error("tap layer " + std::to_string(id) + " does not exist: the model has " +
                  std::to_string(cfg_.num_hidden_layers) + " layers (0-based ids)");
    if (std::find(layer_ids.begin(), layer_ids.begin() + static_cast<std::ptrdiff_t>(i), id) !=
        layer_ids.begin() + static_cast<std::ptrdiff_t>(i))
      throw Error("tap layer " + std::to_string(id) + " is listed twice (target_layer_ids)");
  }
  tap_layers_ = std::move(layer_ids);
  taps_view_ = ops::Tensor{};
}

void Qwen3Model::set_taps_destination(const ops::Tensor& dst) {
  if (tap_layers_.empty() || dst.rows != taps_view_.rows || dst.cols != taps_view_.cols ||
      dst.dtype != taps_view_.dtype) {
    throw Error("taps destination: [" + std::to_string(dst.rows) + ", " + std::to_string(dst.cols) +
                "], expected this forward's taps [" + std::to_string(taps_view_.rows) + ", " +
                std::to_string(taps_view_.cols) + "] of the activation dtype");
  }
  taps_view_ = dst;
}

std::vector<float> Qwen3Model::taps() const {
  std::vector<float> out(static_cast<size_t>(taps_view_.numel()));
  if (!out.empty()) backend_->download(taps_view_, out.data());
  return out;
}

void Qwen3Model::forward(std::span<const int32_t> tokens, KVCache& cache, std::vector<float>& logits, bool all_logits) {
  require_one_rank("Qwen3Model::forward");
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) throw Error("forward: no tokens given");
  const auto layers = kv_layers();
  if (cache.num_layers() != cfg_.num_hidden_layers || cache.layers()[0].row() != layers[0].row())
    throw Error("forward: the KV cache was not made by this model's new_cache()");
  cache.reserve_append(n);
  BatchContext batch;
  batch.seqs.push_back(SeqSlice{0, n, cache.length(), cache.block_table(), all_logits});
  forward_batch(tokens, batch, cache.pool(), logits);
  cache.commit(n);
}

void Qwen3Model::check_batch(std::span<const int32_t> tokens, const BatchContext& batch, const KVPool& pool) const {
  const std::string what = "forward_batch: ";
  if (batch.seqs.empty()) throw Error(what + "the batch has no requests");
  if (&pool.backend() != backend_.get())
    throw Error(what + "the KV pool lives on another backend than the model (" + pool.backend().describe() + " vs " +
                backend_->describe() + ")");
  if (pool.num_layers() < cfg_.num_hidden_layers)
    throw Error(what + "the KV pool has " + std::to_string(pool.num_layers()) + " layers, the model needs " +
                std::to_string(cfg_.num_hidden_layers));
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l)
    if (pool.shape(l).kv_heads != geo_.kv_heads || pool.shape(l).head_dim != cfg_.head_dim)
      throw Error(what + "KV pool layer " + std::to_string(l) + " is " + std::to_string(pool.shape(l).kv_heads) +
                  " kv heads x " + std::to_string(pool.shape(l).head_dim) + ", the model needs " +
                  std::to_string(geo_.kv_heads) + " x " + std::to_string(cfg_.head_dim));
  const int64_t bs = pool.block_size();
  int64_t next_row = 0;
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    const SeqSlice& s = batch.seqs[i];
    const std::string seq = what + "request " + std::to_string(i) + " of the batch: ";
    if (s.row_begin != next_row)
      throw Error(seq + "rows must follow the previous request's, expected row_begin " + std::to_string(next_row) +
                  ", found " + std::to_string(s.row_begin));
    if (s.n_rows <= 0) throw Error(seq + "n_rows must be positive, found " + std::to_string(s.n_rows));
    if (s.pos0 < 0) throw Error(seq + "pos0 must be >= 0, found " + std::to_string(s.pos0));
    const int64_t end = s.pos0 + s.n_rows;
    if (static_cast<int64_t>(s.block_table.size()) * bs < end)
      throw Error(seq + "its block table of " + std::to_string(s.block_table.size()) + " blocks of " +
                  std::to_string(bs) + " does not cover positions up to " + std::to_string(end - 1));
    for (int64_t b = 0; b < (end + bs - 1) / bs; ++b) {
      const int32_t id = s.block_table[static_cast<size_t>(b)];
      if (id < 0 || id >= pool.num_blocks())
        throw Error(seq + "block table entry " + std::to_string(b) + " is block " + std::to_string(id) +
                    ", the pool has blocks [0, " + std::to_string(pool.num_blocks()) + ")");
    }
    next_row += s.n_rows;
  }
  if (static_cast<int64_t>(tokens.size()) != next_row)
    throw Error(what + std::to_string(tokens.size()) + " tokens given for a batch of " + std::to_string(next_row) +
                " rows");
  check_ids(tokens);
}

std::optional<ops::Tensor> Qwen3Model::tap_of(int64_t layer, int64_t n) const {
  const auto it = std::find(tap_layers_.begin(), tap_layers_.end(), layer);
  if (it == tap_layers_.end()) return std::nullopt;
  const int64_t H = cfg_.hidden_size;
  return taps_view_.row_slice(0, n).col_slice(static_cast<int64_t>(it - tap_layers_.begin()) * H, H);
}

void Qwen3Model::run_batch(std::span<const int32_t> tokens, const BatchContext& batch, KVPool& pool) {
  prepare_batch(tokens, batch, pool);
  forward_prepared(pool);
}

void Qwen3Model::reserve(const BatchLimits& limits) {
  ops::Backend& be = *backend_;
  const int64_t rows = limits.rows;
  inputs_.reserve(be, limits);
  acts_.reserve(be, geo_, rows);
  if (!tap_layers_.empty())
    grow_tensor(be, taps_, be.activation_dtype(), rows, static_cast<int64_t>(tap_layers_.size()) * cfg_.hidden_size);
  grow_tensor(be, selected_, be.activation_dtype(), rows, cfg_.hidden_size);
  grow_tensor(be, logits_, ops::DType::F32, rows, vocab_count());
}

void Qwen3Model::prepare_batch(std::span<const int32_t> tokens, const BatchContext& batch, KVPool& pool,
                               int64_t min_keys) {
  check_batch(tokens, batch, pool);
  ops::Backend& be = *backend_;
  const int64_t n = static_cast<int64_t>(tokens.size());
  inputs_.build(be, batch, pool.block_size(), tokens, LogitRows::PerSeq, min_keys);
  acts_.reserve(be, geo_, n);
  taps_view_ = tap_layers_.empty() ? ops::Tensor{}
                                   : grow_tensor(be, taps_, be.activation_dtype(), n,
                                                 static_cast<int64_t>(tap_layers_.size()) * cfg_.hidden_size);
  const int64_t m = inputs_.num_logit_rows();
  selected_view_ = grow_tensor(be, selected_, be.activation_dtype(), m, cfg_.hidden_size);
  logits_view_ = grow_tensor(be, logits_, ops::DType::F32, m, vocab_count());
}

void Qwen3Model::forward_prepared(KVPool& pool) {
  ops::Backend& be = *backend_;
  const int64_t n = inputs_.rows(), L = cfg_.num_hidden_layers;
  const ops::AttentionMask causal{true, 0};

  const int64_t last_tap = tap_layers_.empty() ? -1 : *std::max_element(tap_layers_.begin(), tap_layers_.end());
  embed(inputs_.ids(), acts_.x.t.row_slice(0, n));
  for (int64_t l = 0; l < L; ++l) {
    const auto& w = layers_[static_cast<size_t>(l)];
    // x becomes layer l-1's output here; its tap is written on the way.
    const auto tap = l > 0 ? tap_of(l - 1, n) : std::nullopt;
    begin_layer(be, w.input_norm.t, geo_.eps, acts_, n, /*pending=*/l > 0, tap ? &*tap : nullptr);
    if (l - 1 == last_tap && taps_written_) taps_written_();
    decoder_layer(be, w, geo_, acts_, n, inputs_.attn(), causal, pool.k(l), pool.v(l), rope_, shard_);
  }
  const auto tap = tap_of(L - 1, n);
  begin_layer(be, norm_.t, geo_.eps, acts_, n, /*pending=*/true, tap ? &*tap : nullptr);
  if (L - 1 == last_tap && taps_written_) taps_written_();

  // The final norm ran over every row (taps need the residual of all); the
  // head only over the rows whose logits are wanted.
  be.gather_rows(acts_.xn.t.row_slice(0, n), inputs_.logit_rows().as<int32_t>(), selected_view_);
  lm_head(selected_view_, logits_view_);
}

void Qwen3Model::forward_batch(std::span<const int32_t> tokens, const BatchContext& batch, KVPool& pool,
                               std::vector<float>& logits) {
  run_batch(tokens, batch, pool);
  logits.resize(static_cast<size_t>(logits_view_.numel()));
  backend_->download(logits_view_, logits.data());
}

}  // namespace flashdraft::model
