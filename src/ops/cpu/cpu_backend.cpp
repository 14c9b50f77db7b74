// The CPU reference backend: fp32 everywhere, each op a thin adapter from
// tensor views to the reference functions of ops/ops.h. Work runs when it is
// enqueued, so synchronize() has nothing to wait for.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/dtype.h"
#include "ops/argmax_key.h"
#include "ops/backend.h"
#include "ops/cpu/matmul_small.h"
#include "ops/cpu/penalize.h"
#include "ops/cpu/sampling.h"
#include "ops/ops.h"

namespace flashdraft::ops {
namespace {

// The checkpoint's element types widen through io's one conversion.
io::DType io_dtype(DType dtype) {
  switch (dtype) {
    case DType::BF16: return io::DType::BF16;
    case DType::F16: return io::DType::F16;
    default: return io::DType::F32;
  }
}

void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("cpu backend ") + op + ": " + what);
}

void require_f32(const Tensor& t, const char* op, const char* name) {
  require(t.dtype == DType::F32 && t.device == Device::CPU, op,
          std::string(name) + " must be an f32 cpu tensor, found " + dtype_name(t.dtype) + " on " +
              device_name(t.device));
}

float* row(const Tensor& t, int64_t r) { return t.as<float>() + r * t.ld; }

// splitmix64: a counter-based generator, so element i's value depends only on (seed, i).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

SampleRow sample_row_of(const Tensor& rows, int64_t r) {
  SampleRow p;
  std::memcpy(static_cast<void*>(&p), rows.as<int32_t>() + r * rows.ld, sizeof p);  // trivially copyable
  return p;
}

void check_sample_args(const char* op, const Tensor& logits, const Tensor& rows) {
  require_f32(logits, op, "logits");
  require(rows.dtype == DType::I32 && rows.rows == logits.rows && rows.cols == SampleRow::kWords, op,
          "rows must be i32 [logits.rows, SampleRow::kWords]");
}

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::CPU; }
  std::string describe() const override { return "cpu (fp32 reference)"; }
  DType weight_dtype() const override { return DType::F32; }
  DType activation_dtype() const override { return DType::F32; }

  Buffer alloc(size_t bytes) override {
    constexpr size_t kAlign = 64;
    void* p = std::aligned_alloc(kAlign, (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign);
    if (!p) throw Error("cpu backend: out of memory allocating " + std::to_string(bytes) + " bytes");
    return Buffer(std::shared_ptr<void>(p, std::free), bytes, Device::CPU);
  }

  size_t free_memory() const override {
    return static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  }

  void upload(const Tensor& dst, const void* src, DType src_dtype) override {
    const auto* s = static_cast<const std::byte*>(src);
    if (dst.dtype == DType::I32) {
      require(src_dtype == DType::I32, "upload", "i32 tensors take i32 data only");
      for (int64_t r = 0; r < dst.rows; ++r)
        std::memcpy(dst.as<int32_t>() + r * dst.ld, s + r * dst.cols * 4, static_cast<size_t>(dst.cols) * 4);
      return;
    }
    require_f32(dst, "upload", "dst");
    require(src_dtype != DType::I32, "upload", "i32 data into an f32 tensor");
    const size_t es = dtype_size(src_dtype);
    for (int64_t r = 0; r < dst.rows; ++r)
      io::widen_to_f32(io_dtype(src_dtype), s + static_cast<size_t>(r * dst.cols) * es, static_cast<size_t>(dst.cols),
                       row(dst, r));
  }

  void download(const Tensor& src, float* dst) override {
    require_f32(src, "download", "src");
    for (int64_t r = 0; r < src.rows; ++r) std::copy_n(row(src, r), src.cols, dst + r * src.cols);
  }

  void download_i32(const Tensor& src, int32_t* dst) override {
    require(src.dtype == DType::I32, "download_i32", "src must be i32");
    for (int64_t r = 0; r < src.rows; ++r) std::copy_n(src.as<int32_t>() + r * src.ld, src.cols, dst + r * src.cols);
  }

  void copy(const Tensor& src, const Tensor& dst) override {
    require(src.dtype == dst.dtype && src.rows == dst.rows && src.cols == dst.cols, "copy",
            "src and dst differ in dtype or shape");
    const size_t es = dtype_size(src.dtype);
    for (int64_t r = 0; r < src.rows; ++r)
      std::memmove(static_cast<std::byte*>(dst.data) + static_cast<size_t>(r * dst.ld) * es,
                   static_cast<const std::byte*>(src.data) + static_cast<size_t>(r * src.ld) * es,
                   static_cast<size_t>(src.cols) * es);
  }

  void fill_nan(const Tensor& t) override {
    require_f32(t, "fill_nan", "t");
    for (int64_t r = 0; r < t.rows; ++r) std::fill_n(row(t, r), t.cols, std::numeric_limits<float>::quiet_NaN());
  }

  void fill_uniform(const Tensor& t, uint64_t seed, float lo, float hi) override {
    require_f32(t, "fill_uniform", "t");
    const uint64_t base = mix(seed);
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t c = 0; c < t.cols; ++c) {
        const double u = static_cast<double>(mix(base + static_cast<uint64_t>(r * t.cols + c)) >> 11) * 0x1.0p-53;
        row(t, r)[c] = lo + static_cast<float>(u) * (hi - lo);
      }
  }

  void synchronize() override {}

  void embedding(const Tensor& table, const Tensor& ids, const Tensor& out, float scale) override {
    require_f32(table, "embedding", "table");
    require_f32(out, "embedding", "out");
    require(ids.dtype == DType::I32 && ids.rows == out.rows && out.cols == table.cols && table.contiguous(),
            "embedding", "shape mismatch");
    const int32_t* id = ids.as<int32_t>();
    // The reference op gathers (and checks each id against the vocabulary).
    if (ids.ld == 1 && out.contiguous())
      cpu::embedding(table.as<float>(), table.rows, table.cols, id, out.rows, out.as<float>());
    else
      for (int64_t r = 0; r < out.rows; ++r)
        cpu::embedding(table.as<float>(), table.rows, table.cols, id + r * ids.ld, 1, row(out, r));
    if (scale != 1.0f)
      for (int64_t r = 0; r < out.rows; ++r)
        for (float& v : std::span<float>(row(out, r), static_cast<size_t>(out.cols))) v *= scale;
  }

  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) override {
    require_f32(x, "matmul", "x");
    require_f32(w, "matmul", "w");
    require_f32(y, "matmul", "y");
    require(x.cols == w.cols && y.rows == x.rows && y.cols == w.rows && w.contiguous(), "matmul",
            "shapes " + std::to_string(x.rows) + "x" + std::to_string(x.cols) + " · (" + std::to_string(w.rows) + "x" +
                std::to_string(w.cols) + ")^T -> " + std::to_string(y.rows) + "x" + std::to_string(y.cols));
    if (x.rows == 0) return;
    const float* b = bias ? bias->as<float>() : nullptr;
    const float* xs = x.as<float>();
    if (!x.contiguous()) {
      scratch_.resize(static_cast<size_t>(x.rows * x.cols));
      for (int64_t r = 0; r < x.rows; ++r) std::copy_n(row(x, r), x.cols, scratch_.data() + r * x.cols);
      xs = scratch_.data();
    }
    if (y.contiguous()) {
      cpu::matmul_small(xs, w.as<float>(), b, y.as<float>(), x.rows, x.cols, w.rows);
      return;
    }
    out_scratch_.resize(static_cast<size_t>(y.rows * y.cols));
    cpu::matmul_small(xs, w.as<float>(), b, out_scratch_.data(), x.rows, x.cols, w.rows);
    for (int64_t r = 0; r < y.rows; ++r) std::copy_n(out_scratch_.data() + r * y.cols, y.cols, row(y, r));
  }

  void rmsnorm(const Tensor& x, const Tensor& w, const Tensor& y, float eps) override {
    require_f32(x, "rmsnorm", "x");
    require_f32(y, "rmsnorm", "y");
    require(w.numel() == x.cols && y.rows == x.rows && y.cols == x.cols, "rmsnorm", "shape mismatch");
    if (x.contiguous() && y.contiguous()) return cpu::rmsnorm(x.as<float>(), w.as<float>(), y.as<float>(), x.rows, x.cols, eps);
    for (int64_t r = 0; r < x.rows; ++r) cpu::rmsnorm(row(x, r), w.as<float>(), row(y, r), 1, x.cols, eps);
  }

  void add_rmsnorm(const Tensor& residual, const Tensor& delta, const Tensor& w, const Tensor& y, float eps,
                   const Tensor* residual_out) override {
    require_f32(residual, "add_rmsnorm", "residual");
    require_f32(delta, "add_rmsnorm", "delta");
    require(delta.rows == residual.rows && delta.cols == residual.cols, "add_rmsnorm", "shape mismatch");
    for (int64_t r = 0; r < residual.rows; ++r) cpu::add(row(residual, r), row(delta, r), residual.cols);
    if (residual_out) copy(residual, *residual_out);
    rmsnorm(residual, w, y, eps);
  }

  void rope_store_kv(const Tensor& qkv, int64_t heads, int64_t kv_heads, int64_t head_dim, const Tensor* q_norm,
                     const Tensor* k_norm, const int32_t* positions, const Rope& rope, float eps, const int32_t* slots,
                     const Tensor& k_cache, const Tensor& v_cache) override {
    require_f32(qkv, "rope_store_kv", "qkv");
    const int64_t q_w = heads * head_dim, kv_w = kv_heads * head_dim;
    require(heads >= 0 && kv_heads > 0 && head_dim % 2 == 0 && qkv.cols == q_w + 2 * kv_w &&
                rope.inv_freq.numel() == head_dim / 2 && k_cache.cols == kv_w && v_cache.cols == kv_w,
            "rope_store_kv",
            "qkv must be [n, (heads + 2 kv_heads) * head_dim] with an even head_dim, head_dim / 2 frequencies and "
            "caches of kv_heads * head_dim columns");
    // Norm, then rotation, in place on `heads` consecutive heads at v.
    const auto rope_heads = [&](float* v, int64_t n_heads, const Tensor* norm_w, int64_t pos) {
      if (norm_w) cpu::rmsnorm(v, norm_w->as<float>(), v, n_heads, head_dim, eps);
      cpu::rope_neox(v, &pos, rope.inv_freq.as<float>(), 1, n_heads, head_dim, rope.attention_factor);
    };
    for (int64_t r = 0; r < qkv.rows; ++r) {
      float* v = row(qkv, r);
      if (heads > 0) rope_heads(v, heads, q_norm, positions[r]);
      const int64_t slot = slots[r];
      require(slot >= 0 && slot < k_cache.rows, "rope_store_kv", "slot " + std::to_string(slot) + " outside the pool");
      float* k = row(k_cache, slot);
      std::copy_n(v + q_w, kv_w, k);
      rope_heads(k, kv_heads, k_norm, positions[r]);
      std::copy_n(v + q_w + kv_w, kv_w, row(v_cache, slot));
    }
  }

  void silu_glu(const Tensor& gate_up, const Tensor& out) override {
    require_f32(gate_up, "silu_glu", "gate_up");
    require_f32(out, "silu_glu", "out");
    const int64_t I = out.cols;
    require(gate_up.cols == 2 * I && gate_up.rows == out.rows, "silu_glu", "gate_up must be [n, 2 * out.cols]");
    for (int64_t r = 0; r < out.rows; ++r) cpu::silu_glu(row(gate_up, r), row(gate_up, r) + I, row(out, r), I);
  }

  void paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                       const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads, int64_t n_kv_heads,
                       int64_t head_dim, float scale) override {
    require_f32(q, "paged_attention", "q");
    require_f32(out, "paged_attention", "out");
    require(q.cols == n_heads * head_dim && out.cols == q.cols && k_cache.cols == n_kv_heads * head_dim &&
                k_cache.contiguous() && v_cache.contiguous(),
            "paged_attention", "shape mismatch");
    seqs_.resize(static_cast<size_t>(batch.n_seqs));
    for (int32_t s = 0; s < batch.n_seqs; ++s)
      seqs_[static_cast<size_t>(s)] = cpu::PagedSeq{batch.q_start[s], batch.q_start[s + 1] - batch.q_start[s],
                                                    batch.pos0[s], batch.block_tables + int64_t{s} * batch.max_blocks};
    cpu::paged_attention(q.as<float>(), q.ld, k_cache.as<float>(), v_cache.as<float>(), out.as<float>(), out.ld,
                         seqs_.data(), batch.n_seqs, batch.block_size, n_heads, n_kv_heads, head_dim, scale,
                         mask.causal, mask.window);
  }

  void gather_rows(const Tensor& src, const int32_t* rows, const Tensor& dst) override {
    require(src.dtype == dst.dtype && src.cols == dst.cols, "gather_rows", "dtype or width mismatch");
    const size_t es = dtype_size(src.dtype);
    for (int64_t r = 0; r < dst.rows; ++r) {
      require(rows[r] >= 0 && rows[r] < src.rows, "gather_rows", "row index outside the source");
      std::memcpy(static_cast<std::byte*>(dst.data) + static_cast<size_t>(r * dst.ld) * es,
                  static_cast<const std::byte*>(src.data) + static_cast<size_t>(rows[r] * src.ld) * es,
                  static_cast<size_t>(src.cols) * es);
    }
  }

  void scatter_rows(const Tensor& src, const int32_t* rows, const Tensor& dst) override {
    require(src.dtype == dst.dtype && src.cols == dst.cols, "scatter_rows", "dtype or width mismatch");
    const size_t es = dtype_size(src.dtype);
    for (int64_t r = 0; r < src.rows; ++r) {
      if (rows[r] < 0) continue;
      require(rows[r] < dst.rows, "scatter_rows", "row index outside the destination");
      std::memcpy(static_cast<std::byte*>(dst.data) + static_cast<size_t>(rows[r] * dst.ld) * es,
                  static_cast<const std::byte*>(src.data) + static_cast<size_t>(r * src.ld) * es,
                  static_cast<size_t>(src.cols) * es);
    }
  }

  void softcap(const Tensor& x, float cap) override {
    require_f32(x, "softcap", "x");
    const double c = cap;
    for (int64_t r = 0; r < x.rows; ++r)
      for (float& v : std::span<float>(row(x, r), static_cast<size_t>(x.cols)))
        v = static_cast<float>(std::tanh(v / c) * c);
  }

  void argmax(const Tensor& x, const Tensor& out) override {
    require_f32(x, "argmax", "x");
    require(out.dtype == DType::I32 && out.rows == x.rows, "argmax", "out must be i32 [x.rows, 1]");
    for (int64_t r = 0; r < x.rows; ++r) out.as<int32_t>()[r * out.ld] = static_cast<int32_t>(cpu::argmax(row(x, r), x.cols));
  }

  void argmax_key(const Tensor& x, int64_t offset, const Tensor& keys) override {
    require_f32(x, "argmax_key", "x");
    require(keys.dtype == DType::I32 && keys.rows == x.rows && keys.cols == 2, "argmax_key",
            "keys must be i32 [x.rows, 2]");
    for (int64_t r = 0; r < x.rows; ++r) {
      const int64_t best = cpu::argmax(row(x, r), x.cols);
      int32_t* k = keys.as<int32_t>() + r * keys.ld;
      k[0] = static_cast<int32_t>(offset + best);
      k[1] = static_cast<int32_t>(argmax_key::high_word(row(x, r)[best]));
    }
  }

  void sample(const Tensor& logits, const Tensor& rows, const Tensor& out) override {
    check_sample_args("sample", logits, rows);
    require(out.dtype == DType::I32 && out.rows == logits.rows, "sample", "out must be i32 [logits.rows, 1]");
    weights_.resize(static_cast<size_t>(logits.cols));
    for (int64_t r = 0; r < logits.rows; ++r)
      out.as<int32_t>()[r * out.ld] = cpu::sample_row(row(logits, r), logits.cols, sample_row_of(rows, r), weights_.data());
  }

  void accept(const Tensor& logits, const Tensor& rows, const Tensor& seq_start, const Tensor& tokens,
              const Tensor& out) override {
    check_sample_args("accept", logits, rows);
    require(seq_start.dtype == DType::I32 && seq_start.rows == out.rows + 1 && out.dtype == DType::I32 &&
                out.cols == 2 && out.contiguous(),
            "accept", "seq_start must be i32 [n_seqs + 1, 1] and out i32 [n_seqs, 2]");
    sample(logits, rows, tokens);
    std::vector<SampleRow> seq_rows;
    for (int64_t s = 0; s < out.rows; ++s) {
      const int32_t begin = seq_start.as<int32_t>()[s * seq_start.ld], end = seq_start.as<int32_t>()[(s + 1) * seq_start.ld];
      require(0 <= begin && begin < end && end <= logits.rows, "accept",
              "sequence " + std::to_string(s) + " has rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                  "), outside [0, " + std::to_string(logits.rows) + ") or empty");
      std::vector<int32_t> drawn;
      seq_rows.clear();
      for (int32_t r = begin; r < end; ++r) {
        seq_rows.push_back(sample_row_of(rows, r));
        drawn.push_back(tokens.as<int32_t>()[r * tokens.ld]);
      }
      const int32_t a = cpu::accepted_prefix(drawn.data(), seq_rows.data(), end - begin);
      out.as<int32_t>()[2 * s] = a;
      out.as<int32_t>()[2 * s + 1] = drawn[static_cast<size_t>(a)];
    }
  }

  void penalize(const Tensor& logits, const Tensor& rows, const Tensor& items, const Tensor& drafts) override {
    require_f32(logits, "penalize", "logits");
    require(rows.dtype == DType::I32 && rows.rows == logits.rows && rows.cols == PenaltyRow::kWords, "penalize",
            "rows must be i32 [logits.rows, PenaltyRow::kWords]");
    require(items.empty() || (items.dtype == DType::I32 && items.cols == 3 && items.contiguous()), "penalize",
            "items must be contiguous i32 [m, 3]");
    require(drafts.empty() || (drafts.dtype == DType::I32 && drafts.cols == 1 && drafts.contiguous()), "penalize",
            "drafts must be contiguous i32 [d, 1]");
    for (int64_t r = 0; r < logits.rows; ++r) {
      PenaltyRow p;
      std::memcpy(static_cast<void*>(&p), rows.as<int32_t>() + r * rows.ld, sizeof p);  // trivially copyable
      require(p.items_count >= 0 && p.items_begin >= 0 && p.items_begin + p.items_count <= items.rows &&
                  p.drafts_count >= 0 && p.drafts_begin >= 0 && p.drafts_begin + p.drafts_count <= drafts.rows,
              "penalize", "row " + std::to_string(r) + " reaches past items or drafts");
      cpu::penalize_row(row(logits, r), logits.cols, p, items.as<int32_t>() + int64_t{p.items_begin} * 3,
                        drafts.as<int32_t>() + p.drafts_begin);
    }
  }

  void carry_forward(const Tensor& verdicts, const Tensor& lag, const Tensor& fixes) override {
    require(verdicts.dtype == DType::I32 && verdicts.cols == 2 && verdicts.contiguous(), "carry_forward",
            "verdicts must be contiguous i32 [n, 2]");
    require(lag.empty() || (lag.dtype == DType::I32 && lag.cols == 1 && lag.rows == verdicts.rows), "carry_forward",
            "lag must be i32 [verdicts.rows, 1] or empty");
    require(fixes.empty() || (fixes.dtype == DType::I32 && fixes.cols == InputFix::kWords && fixes.contiguous()),
            "carry_forward", "fixes must be contiguous i32 [n, InputFix::kWords]");
    for (int64_t i = 0; i < fixes.rows; ++i) {
      InputFix f;
      std::memcpy(static_cast<void*>(&f), fixes.as<int32_t>() + i * InputFix::kWords, sizeof f);
      require(f.verdict >= 0 && f.verdict < verdicts.rows && f.count >= 0, "carry_forward",
              "fix " + std::to_string(i) + " reads verdict row " + std::to_string(f.verdict) + " of " +
                  std::to_string(verdicts.rows));
      const int32_t* v = verdicts.as<int32_t>() + 2 * f.verdict;
      const int32_t d = v[0] + (lag.empty() ? 0 : lag.as<int32_t>()[f.verdict * lag.ld]) + f.shift;
      for (int32_t j = 0; j < f.count; ++j) {
        int32_t& w = f.dst[static_cast<int64_t>(j) * f.stride];
        if (f.kind == InputFix::kShift) {
          w += d;
        } else if (f.kind == InputFix::kToken) {
          w = v[1];
        } else if (f.kind == InputFix::kLag) {
          w = d;
        } else {
          const int32_t pos = f.value + d + j;
          require(pos >= 0 && f.block_size > 0, "carry_forward", "a slot fix at position " + std::to_string(pos));
          w = f.table[pos / f.block_size] * f.block_size + pos % f.block_size;
        }
      }
    }
  }

 private:
  std::vector<float> scratch_, out_scratch_, weights_;
  std::vector<cpu::PagedSeq> seqs_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace flashdraft::ops
