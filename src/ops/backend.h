#pragma once
// The backend seam: model/ is written once against this interface, and each
// backend (ops/cpu: the fp32 reference; ops/cuda: bf16 on the GPU) implements
// it. A backend owns its memory (Buffer), its queue of work (every op is
// enqueued in order; synchronize() waits for all of it) and the op table below.
//
// Tensors are 2-D strided views: `rows` rows of `cols` elements, row r starting
// r * ld elements after row 0. Per-token head vectors are [rows, heads * head_dim];
// a Linear weight is [out, in] as in Hugging Face; a paged KV layer is
// [num_blocks * block_size slots, kv_heads * head_dim].
//
// Dtypes: the CPU backend computes in f32 everywhere (weights widened at load).
// The CUDA backend keeps weights, activations and the KV pool in bf16 and
// accumulates in f32; logits come out f32 on both. The residual stream (the
// decoder layers' running sum x) is f32 on every backend: rounding it to bf16
// after each block is the largest error a bf16 forward makes (each rounding
// costs 2^-9 of the whole stream, not of the block's small update).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace flashdraft::ops {

enum class DType : uint8_t { F32, BF16, F16, I32 };
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "f32", "bf16", "f16", "i32"

enum class Device : uint8_t { CPU, CUDA };
const char* device_name(Device device);  // "cpu", "cuda"

// Where a tensor's elements sit. MatmulTiles: a weight that its backend
// rearranged for its matmul (Backend::prepare_matmul_weight); only matmul
// reads it, as its w, and it cannot be sliced. GluTiles: a [gate; up] weight
// rearranged for matmul_silu_glu (Backend::prepare_glu_weight), read by that
// op only.
enum class Layout : uint8_t { RowMajor, MatmulTiles, GluTiles };

// How a prepared weight's values are held (Backend::prepare_matmul_weight).
// Fp8: every row rounded to the fp8 grid of ops/fp8_grid.h at load (a
// quantized drafter), the same values on every backend; the CUDA backend
// also keeps them as fp8 codes, which its weight streamer reads.
enum class WeightQuant : uint8_t { None, Fp8 };
const char* weight_quant_name(WeightQuant quant);  // "none", "fp8"

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  Device device = Device::CPU;
  int64_t rows = 0, cols = 0;
  int64_t ld = 0;  // elements from one row's start to the next (>= cols)
  Layout layout = Layout::RowMajor;
  WeightQuant quant = WeightQuant::None;  // a prepared weight's (see WeightQuant)

  template <class T>
  T* as() const { return static_cast<T*>(data); }
  bool empty() const { return rows == 0 || cols == 0; }
  bool contiguous() const { return ld == cols || rows <= 1; }
  int64_t numel() const { return rows * cols; }
  // Rows [r0, r0 + n) / columns [c0, c0 + n) of this view (no copy; bounds checked).
  Tensor row_slice(int64_t r0, int64_t n) const;
  Tensor col_slice(int64_t c0, int64_t n) const;
  // The same memory seen as rows x cols (needs a contiguous view of as many elements).
  Tensor reshape(int64_t rows, int64_t cols) const;
};

// An owning allocation made by a backend; freed (on its device) when the last
// copy of the Buffer goes away.
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::shared_ptr<void> mem, size_t bytes, Device device)
      : mem_(std::move(mem)), bytes_(bytes), device_(device) {}
  void* data() const { return mem_.get(); }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  // The buffer's start seen as a contiguous rows x cols tensor (checked against its size).
  Tensor view(DType dtype, int64_t rows, int64_t cols) const;

 private:
  std::shared_ptr<void> mem_;
  size_t bytes_ = 0;
  Device device_ = Device::CPU;
};

// A buffer and the contiguous tensor that fills it.
struct OwnedTensor {
  Buffer buffer;
  Tensor t;
};

// How the query rows of one attention call see keys. Query row i of a sequence
// sits at position p = pos0 + i; the sequence's keys are positions
// [0, pos0 + n_rows) (context already in the pool, then its own rows). Key j
// is visible iff (!causal || j <= p) and (window == 0 || j > p - window), and
// a window without causality is symmetric: also j < p + window.
//   causal, window 0:       the target (prefill, decode, verify)
//   !causal, window 0:      DFlash full_attention layer: all context + the whole block
//   causal, window W:       DFlash sliding_attention layer: keys in (p - W, p]
//   !causal, window W:      DFlash non-causal sliding layer: keys in (p - W, p + W)
struct AttentionMask {
  bool causal = true;
  int64_t window = 0;
};

// The flat per-step inputs of one batched forward, in backend memory (device
// arrays on CUDA). Sequence s owns query rows [q_start[s], q_start[s + 1]) at
// positions pos0[s] .. ; its position p lives in pool slot
// block_tables[s * max_blocks + p / block_size] * block_size + p % block_size.
// positions[r] and slots[r] give the same per row (RoPE and the K/V store).
// The host-side maxima size launch grids without reading device memory.
struct AttnBatch {
  int32_t n_seqs = 0;
  int32_t n_rows = 0;        // q_start[n_seqs]
  int32_t max_rows = 0;      // largest q_start[s + 1] - q_start[s]
  int32_t max_keys = 0;      // largest pos0[s] + rows of s
  int32_t max_blocks = 0;    // row stride of block_tables
  int32_t block_size = 0;
  const int32_t* q_start = nullptr;       // [n_seqs + 1]
  const int32_t* pos0 = nullptr;          // [n_seqs]
  const int32_t* block_tables = nullptr;  // [n_seqs * max_blocks]
  const int32_t* positions = nullptr;     // [n_rows]
  const int32_t* slots = nullptr;         // [n_rows]
};

// Rotary embedding tables: inv_freq [head_dim / 2] f32 (computed on the host
// with Hugging Face's float32 roundings), neox layout (element i pairs with
// i + head_dim / 2); cos and sin of pos * inv_freq[i] are multiplied by
// attention_factor (1 except for yarn).
struct Rope {
  Tensor inv_freq;  // [1, head_dim / 2] f32
  float attention_factor = 1.0f;
};

// One logits row's sampling request for Backend::sample / accept: eight
// 32-bit words, so a step's rows travel as one i32 tensor [n, kWords].
struct SampleRow {
  static constexpr int64_t kWords = 8;
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 0;         // <= 0 or >= vocab: off
  float top_p = 1.0f;        // >= 1: off
  float min_p = 0.0f;        // <= 0: off
  uint32_t seed_lo = 0, seed_hi = 0;  // the request's 64-bit seed
  int32_t position = 0;      // the position of the token this row decides
  int32_t draft = -1;        // accept: the draft proposed for that position
};
static_assert(sizeof(SampleRow) == SampleRow::kWords * 4);

// Work recorded once and replayed as one launch (a CUDA graph): the same ops
// on the same memory, with whatever that memory holds at replay time.
class Graph {
 public:
  virtual ~Graph() = default;
  // Enqueues the recorded ops on the backend's queue.
  virtual void replay() = 0;
};

// One logits row's penalties for Backend::penalize (OpenAI / vLLM semantics),
// eight 32-bit words like SampleRow. A row touches only the tokens of its
// sequence's item list and of its own extra output tokens.
struct PenaltyRow {
  static constexpr int64_t kWords = 8;
  float repetition = 1.0f;  // tokens of prompt or output: l > 0 ? l / r : l * r (1: off)
  float frequency = 0.0f;   // l -= frequency * (times the token is in the output)
  float presence = 0.0f;    // l -= presence once the token is in the output
  int32_t items_begin = 0, items_count = 0;    // the sequence's items: rows of `items`
  int32_t drafts_begin = 0, drafts_count = 0;  // output tokens only this row adds: entries of `drafts`
  int32_t unused = 0;
};
static_assert(sizeof(PenaltyRow) == PenaltyRow::kWords * 4);

// One edit of a step's inputs that the step queued just before it decides
// (Backend::carry_forward; overlapped scheduling): the host built them as if
// every sequence of that step kept all its drafts, and the backend puts in
// what it kept. A fix moves its words by d = accepted + lag + shift, where
// accepted is the earlier step's verdict for the sequence and lag how far
// that step's own positions were off the host's (a step planned the same
// way; 0 for one planned from read results). Twelve 32-bit words, so a
// step's fixes travel as one i32 tensor [n, kWords]; dst and table are
// addresses in the backend's memory.
struct InputFix {
  static constexpr int64_t kWords = 12;
  enum Kind : int32_t {
    kShift = 0,  // dst[j * stride] += d (positions, first positions, sampling rows' positions)
    kToken = 1,  // dst[j * stride] = token (the next anchor's id)
    kSlot = 2,   // dst[j * stride] = the KV slot of position value + d + j through `table`
    kLag = 3,    // dst[j * stride] = d (this step's lag, for the step after it)
  };
  int32_t* dst = nullptr;          // the first word edited
  const int32_t* table = nullptr;  // kSlot: the sequence's block table
  int32_t verdict = 0;  // row of the earlier step's verdicts {accepted, token} (Backend::accept's out) and lag
  int32_t kind = kShift;
  int32_t shift = 0;
  int32_t value = 0;  // kSlot: the host's position of word 0
  int32_t count = 1;  // words edited
  int32_t stride = 1;
  int32_t block_size = 0;  // kSlot
  int32_t unused = 0;
};
static_assert(sizeof(InputFix) == InputFix::kWords * 4);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  // One line for logs: "cpu (fp32 reference)", "cuda:0 NVIDIA H100 80GB HBM3 (bf16)".
  virtual std::string describe() const = 0;
  virtual DType weight_dtype() const = 0;      // what load converts weights to
  virtual DType activation_dtype() const = 0;  // hidden states, q/k/v, the KV pool

  // ---- memory ----
  virtual Buffer alloc(size_t bytes) = 0;
  OwnedTensor alloc_tensor(DType dtype, int64_t rows, int64_t cols);
  // Bytes the backend could still allocate (for sizing the KV pool).
  virtual size_t free_memory() const = 0;
  // Host -> backend: `src` holds dst.rows x dst.cols elements of `src_dtype`,
  // row-major and contiguous; they are converted to dst.dtype (f32/bf16/f16 ->
  // f32/bf16; i32 -> i32 only). Returns when src may be reused.
  virtual void upload(const Tensor& dst, const void* src, DType src_dtype) = 0;
  // Backend -> host, f32 out (bf16/f16 widened; i32 via download_i32).
  // Waits for the work queued before it.
  virtual void download(const Tensor& src, float* dst) = 0;
  virtual void download_i32(const Tensor& src, int32_t* dst) = 0;
  // The same without waiting: queues the copy behind the work queued so far
  // and returns; dst is filled by finish_downloads(), which waits for every
  // copy queued this way (and for nothing queued after them). Lets the
  // backend go on with later work while the host reads a step's results.
  // Backends without a queue of their own copy at once.
  virtual void download_i32_later(const Tensor& src, int32_t* dst) { download_i32(src, dst); }
  virtual void finish_downloads() {}
  // Closes the downloads queued later since the last mark into one group and
  // returns its mark; finish_downloads_to(mark) fills only the groups up to
  // that one, waiting for nothing queued after them: a host reads one step's
  // results while the step launched behind them runs (overlapped scheduling).
  virtual uint64_t mark_downloads() { return 0; }
  virtual void finish_downloads_to(uint64_t mark) {
    (void)mark;
    finish_downloads();
  }
  // dst <- src, same shape, any strides; same dtype, or f32 -> bf16 (rounded
  // to nearest even: the f32 residual stream copied out as the drafter's taps).
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  // Every element of t set to a NaN bit pattern (f32/bf16/f16), for tests
  // that must notice reads of memory nothing wrote.
  virtual void fill_nan(const Tensor& t) = 0;
  // Every element of t (f32/bf16/f16) drawn uniformly from [lo, hi) by a
  // generator seeded with `seed` (same seed, same tensor on one backend):
  // --load-format dummy builds real-size models this way without a host copy.
  virtual void fill_uniform(const Tensor& t, uint64_t seed, float lo, float hi) = 0;
  virtual void synchronize() = 0;
  // Records the ops `work` enqueues (nothing runs) for replay; null where the
  // backend has no graphs (the CPU: every op runs as it is called). `work`
  // must enqueue ops only: no upload, download or synchronize, and no
  // allocation that the replay would need to see (size buffers first).
  // The backend's queue as its native handle (the cudaStream_t of a CUDA
  // backend), for collectives that enqueue on it; null on the CPU.
  virtual void* native_queue() const { return nullptr; }
  virtual bool supports_graphs() const { return false; }
  virtual std::unique_ptr<Graph> capture(const std::function<void()>& work) {
    (void)work;
    return nullptr;
  }
  // Ops enqueued between begin_beside() and end_beside() may run beside the
  // ops enqueued after them, until join_beside(): on a second queue that
  // starts once what came before begin_beside() is done (CUDA: a forked
  // stream, recorded into a graph as a branch that joins it); in order
  // where there is one queue. Until the join, neither side may write what
  // the other reads or writes. One such region at a time.
  virtual void begin_beside() {}
  virtual void end_beside() {}
  virtual void join_beside() {}

  // ---- ops (enqueued; inputs and outputs in this backend's memory) ----
  // out[r] = table[ids[r]] * scale. ids: [n, 1] i32; out f32 (the residual
  // stream) or the activation dtype. An id outside the table is the caller's
  // bug (checked on the host before upload).
  virtual void embedding(const Tensor& table, const Tensor& ids, const Tensor& out, float scale) = 0;
  // y = x · w^T (+ bias[1, out]). x [n, in], w [out, in], y [n, out]; y may be
  // f32 while x and w are bf16 (logits). y must not alias x. w may be a
  // weight prepare_matmul_weight() rearranged.
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) = 0;
  // Gives a loaded weight (used as matmul's w only, whole) the layout this
  // backend's matmul reads fastest, replacing its buffer; the values and every
  // product stay the same, except that with WeightQuant::Fp8 every row is
  // first rounded to the fp8 grid (ops/fp8_grid.h), on every backend alike.
  // Default: rounded if asked (weights in f32 or bf16), layout left as it is.
  virtual void prepare_matmul_weight(OwnedTensor& w, WeightQuant quant = WeightQuant::None);
  // The same for a fused [gate; up] projection [2 I, in] that only
  // matmul_silu_glu reads. Default: prepare_matmul_weight.
  virtual void prepare_glu_weight(OwnedTensor& w, WeightQuant quant = WeightQuant::None) {
    prepare_matmul_weight(w, quant);
  }
  // A prepared weight's values back in row-major order: dst [w.rows, w.cols]
  // in the weight dtype (a copy of a model's weight to prepare differently,
  // such as a quantized drafter's lm head). Default: copy().
  virtual void matmul_weight_rows(const Tensor& w, const Tensor& dst) { copy(w, dst); }
  // y = x / sqrt(mean(x^2) + eps) * w, per row. x f32 (the residual stream)
  // or the activation dtype, y the activation dtype; y may be x when they match.
  virtual void rmsnorm(const Tensor& x, const Tensor& w, const Tensor& y, float eps) = 0;
  // residual += delta; y = rmsnorm(residual) * w. (The residual stream's update
  // and the next norm in one pass.) residual f32; delta and y the activation
  // dtype. residual_out (may be null): the updated residual, rounded to the
  // activation dtype as copy() rounds, also written there (any row stride:
  // the layer's column slice of the drafter's taps, without a copy of its own).
  virtual void add_rmsnorm(const Tensor& residual, const Tensor& delta, const Tensor& w, const Tensor& y, float eps,
                           const Tensor* residual_out) = 0;
  // The attention inputs of each row r of a fused projection qkv [n, (heads +
  // 2 kv_heads) * head_dim] (columns q | k | v; heads may be 0: the drafter's
  // context rows have no q). Per head, q and k are RMS-normed over head_dim
  // with q_norm / k_norm [1, head_dim] (both null: no norm, Llama) and rotated
  // by RoPE at positions[r]; q is written back in place, k and v go to pool
  // slot slots[r] of k_cache / v_cache (qkv's k and v columns are left as
  // they were). positions, slots: i32 [n], backend memory.
  virtual void rope_store_kv(const Tensor& qkv, int64_t heads, int64_t kv_heads, int64_t head_dim,
                             const Tensor* q_norm, const Tensor* k_norm, const int32_t* positions, const Rope& rope,
                             float eps, const int32_t* slots, const Tensor& k_cache, const Tensor& v_cache) = 0;
  // matmul(x, w, bias, qkv), then rope_store_kv(qkv, ...): a layer's attention
  // inputs from its normed input in one call, so that a backend may do both
  // in one pass (the CUDA one does for decode and verify rows). Same results
  // as the two ops.
  virtual void matmul_rope_store_kv(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& qkv,
                                    int64_t heads, int64_t kv_heads, int64_t head_dim, const Tensor* q_norm,
                                    const Tensor* k_norm, const int32_t* positions, const Rope& rope, float eps,
                                    const int32_t* slots, const Tensor& k_cache, const Tensor& v_cache) {
    matmul(x, w, bias, qkv);
    rope_store_kv(qkv, heads, kv_heads, head_dim, q_norm, k_norm, positions, rope, eps, slots, k_cache, v_cache);
  }
  // out[r, i] = silu(gate_up[r, i]) * gate_up[r, I + i]; gate_up [n, 2I], out [n, I].
  virtual void silu_glu(const Tensor& gate_up, const Tensor& out) = 0;
  // matmul(x, w, null, gate_up), then silu_glu(gate_up, out): the MLP's first
  // half in one call, so that a backend may do both in one pass (the CUDA one
  // does for decode and verify rows, and then never writes gate_up). w is the
  // [2 I, in] projection (prepare_glu_weight), gate_up [n, 2 I] scratch whose
  // contents afterwards are the backend's, out [n, I].
  virtual void matmul_silu_glu(const Tensor& x, const Tensor& w, const Tensor& gate_up, const Tensor& out) {
    matmul(x, w, nullptr, gate_up);
    silu_glu(gate_up, out);
  }
  // Grouped-query attention of every sequence of the batch over one paged KV
  // layer (which already holds the rows' own K/V). q, out: [batch.n_rows,
  // n_heads * head_dim]; query head h reads kv head h / (n_heads / n_kv_heads).
  virtual void paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                               const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads,
                               int64_t n_kv_heads, int64_t head_dim, float scale) = 0;
  // dst[i] = src[rows[i]]; rows: i32 [dst.rows], backend memory.
  virtual void gather_rows(const Tensor& src, const int32_t* rows, const Tensor& dst) = 0;
  // dst[rows[i]] = src[i]; rows: i32 [src.rows], backend memory, distinct
  // where >= 0; a negative entry drops row i (a recorded step's pad rows).
  virtual void scatter_rows(const Tensor& src, const int32_t* rows, const Tensor& dst) = 0;
  // x = tanh(x / cap) * cap, in place (f32 logits).
  virtual void softcap(const Tensor& x, float cap) = 0;
  // out[r] = index of the largest x[r, :], the first on ties. out: i32 [n, 1].
  virtual void argmax(const Tensor& x, const Tensor& out) = 0;
  // The argmax of a vocabulary shard, for tensor parallelism: x holds
  // columns [offset, offset + x.cols) of each row's logits; keys (i32 [n, 2])
  // row r <- {offset + argmax of x[r] (the first on ties),
  // argmax_key::high_word(its value)} (ops/argmax_key.h), so the smallest
  // key over the shards, as a little-endian u64, is the whole row's argmax.
  virtual void argmax_key(const Tensor& x, int64_t offset, const Tensor& keys) = 0;
  // One token per row of f32 logits [n, vocab] into out i32 [n, 1], row r
  // drawn as rows[r] says (rows: i32 [n, SampleRow::kWords], SampleRow's words).
  //   temperature 0: the argmax, the lowest id on ties.
  //   Otherwise token j weighs w_j = exp((l_j - max) / temperature)
  //   (sample_math::weight: the same float operations on every backend) and
  //   the filters run in Hugging Face's order, each on what the last left:
  //     top-k keeps tokens whose logit is >= the k-th largest (boundary ties kept);
  //     top-p keeps tokens whose weight is >= that of the token at which the
  //           running sum of weights, heaviest first, reaches top_p of the
  //           total (that token and its ties kept; so is the top token);
  //     min-p keeps tokens with w >= min_p (min_p times the top weight, 1).
  //   The token is the first id j, in ascending order, at which the running
  //   sum of kept weights exceeds u * their total, where u =
  //   sample_math::uniform(seed, position, 0): one uniform per position of
  //   a request, whatever else shares the step.
  // A row that cannot be sampled (a NaN or +inf logit, or all -inf) gets -1.
  // Sums are in double, added in an order of the backend's choosing: two
  // backends can pick different tokens for the same row and key only when
  // u * total, or top_p's target, lies within that rounding (~1e-16 of the
  // total) of the edge between two tokens.
  virtual void sample(const Tensor& logits, const Tensor& rows, const Tensor& out) = 0;
  // DFlash verification with the same draws. Sequence s owns logits rows
  // [seq_start[s], seq_start[s + 1]) (at least one; seq_start: i32
  // [n_seqs + 1, 1]): a verify's [anchor, d1 .. dk], whose row i decides the
  // token after d_i and carries draft = d_{i+1}, or the one row of a plain
  // decode step or of a prefill's end. tokens (i32 [n, 1]) <- sample() of
  // every row; out (i32 [n_seqs, 2]) <- {a, tokens[seq_start[s] + a]}, a =
  // how many leading rows, the last excluded, drew their own draft.
  // This is the lossless rule for point-mass drafts: a row's token is drawn
  // from its distribution p, so draft d is kept with probability p(d), and
  // after a rejection the token is distributed as p without d, renormalised.
  // With one uniform per position, the emitted tokens are exactly those plain
  // sampling draws from the same logits and seed. Greedy rows: the longest
  // prefix with d_i == argmax(row i-1), then argmax(row a).
  virtual void accept(const Tensor& logits, const Tensor& rows, const Tensor& seq_start, const Tensor& tokens,
                      const Tensor& out) = 0;
  // Logit bias and penalties, in place, before sample / accept (vLLM's order:
  // bias, then repetition, frequency, presence). rows: i32 [logits.rows,
  // PenaltyRow::kWords]. items: i32 [m, 3] {token, output count, bias as f32
  // bits}, each sequence's slice sorted by token without repeats: count >= 1
  // in the output that many times (and maybe the prompt), 0 in the prompt
  // only, -1 in neither (a bias alone). drafts: i32 [d, 1]. Row r's history is
  // its items plus drafts[drafts_begin, + drafts_count) as extra output tokens
  // (a verify row j decides the token after drafts d_1..d_j, so they count as
  // output there). For each token t the row touches, with bias b, output count
  // c and seen = in prompt or output (ops/penalty_math.h, the same float
  // operations on every backend, so results are bit-identical):
  //   l = l + b;  if seen: l = l > 0 ? l / repetition : l * repetition;
  //   if c > 0: l = l - frequency * c;  l = l - presence.
  // Token ids outside [0, vocab) are the caller's bug (checked on the CPU,
  // skipped on the GPU). items or drafts may have 0 rows.
  virtual void penalize(const Tensor& logits, const Tensor& rows, const Tensor& items, const Tensor& drafts) = 0;
  // Applies fixes (i32 [n, InputFix::kWords], each an InputFix) from
  // verdicts (i32 [m, 2], the earlier step's accept out) and lag (i32 [m, 1];
  // empty: all 0), no fix reading another's words. A verdict row outside
  // verdicts is the caller's bug (checked on the CPU).
  virtual void carry_forward(const Tensor& verdicts, const Tensor& lag, const Tensor& fixes) = 0;
};

// The CPU reference backend (always present).
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace flashdraft::ops
