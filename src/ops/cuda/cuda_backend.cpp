#include "ops/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ops/cuda/checks.h"
#include "ops/cuda/cuda_graph.h"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda/matmul_tiles.h"
#include "ops/cuda/paged_attention.h"

namespace flashdraft::ops::cuda {
namespace {

// Two pinned staging buffers: the host converts one chunk while the other is
// in flight, so uploading GBs of weights streams at conversion speed.
constexpr size_t kStagingBytes = 16u << 20;
// Small uploads (a step's inputs, a context write's row ids) rotate through a
// ring of pinned slots instead, each reused once its last copy is done: with
// every upload starting on the first buffer, each waited for the previous
// one's copy, which held the host one drafter context write ahead of the GPU
// through a request's catch-up (writes of a few uploads and kernels each).
constexpr size_t kSlotBytes = 64u << 10;
constexpr int kSlots = 32;

// ---- host dtype conversions (uploads convert on the host, downloads widen) ----

float bf16_to_f32(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, as torch's .to(bfloat16); NaN stays a (quiet) NaN
// instead of rounding up into infinity.
uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (mant << 13);
  } else {
    // Zero or subnormal: mant * 2^-24 is exact in f32.
    const float f = static_cast<float>(mant) * 0x1p-24f;
    std::memcpy(&u, &f, 4);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float to_f32(const void* src, DType dtype, size_t i) {
  switch (dtype) {
    case DType::F32:
      return static_cast<const float*>(src)[i];
    case DType::BF16:
      return bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
    default:
      return f16_to_f32(static_cast<const uint16_t*>(src)[i]);
  }
}

// n elements of src_dtype at src -> n elements of dst_dtype at dst.
void convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, size_t n) {
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, n * dtype_size(dst_dtype));
  } else if (dst_dtype == DType::F32) {
    auto* d = static_cast<float*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = to_f32(src, src_dtype, i);
  } else if (src_dtype == DType::F32) {
    const auto* s = static_cast<const float*>(src);
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(s[i]);
  } else {  // f16 -> bf16, through f32 (exact) with one rounding
    const auto* s = static_cast<const uint16_t*>(src);
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(f16_to_f32(s[i]));
  }
}

// A copy between the host and a (possibly strided) view goes in pieces that
// fit a staging buffer: whole rows where a row fits, else parts of one row.
// A contiguous view is treated as one long row so pieces are as large as the
// buffer allows.
struct Piece {
  int64_t r0, rows, c0, cols;
};

Tensor flat(const Tensor& t) { return t.contiguous() ? Tensor{t.data, t.dtype, t.device, 1, t.numel(), t.numel()} : t; }

std::vector<Piece> pieces(const Tensor& t, size_t capacity_bytes) {
  std::vector<Piece> out;
  const size_t es = dtype_size(t.dtype);
  const auto cap = static_cast<int64_t>(capacity_bytes / es);
  if (t.cols <= cap) {
    const int64_t per = cap / t.cols;
    for (int64_t r = 0; r < t.rows; r += per) out.push_back({r, std::min(per, t.rows - r), 0, t.cols});
  } else {
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t c = 0; c < t.cols; c += cap) out.push_back({r, 1, c, std::min(cap, t.cols - c)});
  }
  return out;
}

void* element(const Tensor& t, int64_t r, int64_t c) {
  return static_cast<char*>(t.data) + static_cast<size_t>(r * t.ld + c) * dtype_size(t.dtype);
}

// Buffers may outlive the backend that made them: freeing needs only the runtime.
void free_device(void* p) {
  if (p) cudaFree(p);
}

// Pinned host memory and the event marking its last transfer.
struct Staging {
  void* host = nullptr;
  cudaEvent_t done = nullptr;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int index) : index_(index), matmul_(nullptr) {
    const int n = device_count();
    if (index < 0 || index >= n)
      throw Error("CUDA device " + std::to_string(index) + " requested, but " + std::to_string(n) +
                  " usable device(s) found");
    check(cudaSetDevice(index), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
    name_ = prop.name;
    check(cudaStreamCreateWithFlags(&main_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    stream_ = main_;
    matmul_ = std::make_unique<Matmul>();
  }

  ~CudaBackend() override {
    // Queued work may still read the staging buffers or the workspace.
    if (main_) cudaStreamSynchronize(main_);
    auto release = [](Staging& s) {
      if (s.done) cudaEventDestroy(s.done);
      if (s.host) cudaFreeHost(s.host);
    };
    for (Staging& s : staging_) release(s);
    for (Staging& s : slots_) release(s);
    for (LaterGroup& g : later_) release(g.staging);
    for (Staging& s : spare_) release(s);
    matmul_.reset();
    if (side_) {
      cudaStreamSynchronize(side_);
      cudaStreamDestroy(side_);
      cudaEventDestroy(fork_);
      cudaEventDestroy(join_);
    }
    if (main_) cudaStreamDestroy(main_);
  }

  Device device() const override { return Device::CUDA; }
  std::string describe() const override { return "cuda:" + std::to_string(index_) + " " + name_ + " (bf16)"; }
  DType weight_dtype() const override { return DType::BF16; }
  DType activation_dtype() const override { return DType::BF16; }

  Buffer alloc(size_t bytes) override {
    void* p = nullptr;
    if (bytes > 0) {
      const cudaError_t status = cudaMalloc(&p, bytes);
      if (status != cudaSuccess) {
        cudaGetLastError();  // an out-of-memory status must not stick to later launches
        throw Error("CUDA out of memory: cannot allocate " + std::to_string(bytes) + " bytes on " + describe() + " (" +
                    std::to_string(free_memory()) + " bytes free): " + cudaGetErrorString(status));
      }
    }
    return Buffer(std::shared_ptr<void>(p, free_device), bytes, Device::CUDA);
  }

  size_t free_memory() const override {
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return free;
  }

  void upload(const Tensor& dst, const void* src, DType src_dtype) override {
    expect_tensor(dst, dst.dtype, "upload", "dst");
    const bool ok =
        src_dtype == dst.dtype || (src_dtype != DType::I32 && (dst.dtype == DType::F32 || dst.dtype == DType::BF16));
    if (!ok) fail("upload", std::string("cannot convert ") + dtype_name(src_dtype) + " to " + dtype_name(dst.dtype));
    if (dst.empty()) return;
    if (!src) fail("upload", "src is null");
    const Tensor t = flat(dst);
    const size_t dst_es = dtype_size(t.dtype), src_es = dtype_size(src_dtype);
    const bool small = static_cast<size_t>(t.rows * t.cols) * std::max(dst_es, src_es) <= kSlotBytes;
    int next = 0;
    for (const Piece& p : pieces(t, kStagingBytes)) {
      Staging& s = small ? slot() : staging(next);
      next ^= 1;
      check(cudaEventSynchronize(s.done), "upload: waiting for a staging buffer");
      // Pieces are whole rows or a part of one row, so their source is contiguous.
      const auto* from = static_cast<const char*>(src) + static_cast<size_t>(p.r0 * t.cols + p.c0) * src_es;
      convert(from, src_dtype, s.host, t.dtype, static_cast<size_t>(p.rows * p.cols));
      const size_t width = static_cast<size_t>(p.cols) * dst_es;
      check(cudaMemcpy2DAsync(element(t, p.r0, p.c0), static_cast<size_t>(row_pitch(t)) * dst_es, s.host, width, width,
                              static_cast<size_t>(p.rows), cudaMemcpyHostToDevice, stream_),
            "upload cudaMemcpy2DAsync");
      check(cudaEventRecord(s.done, stream_), "upload cudaEventRecord");
    }
    // src is consumed; the staging buffers are guarded by their events, so
    // the copies themselves may still be in flight when this returns.
  }

  void download(const Tensor& src, float* dst) override {
    expect_float_tensor(src, "download", "src");
    transfer_down(src, dst, [&](const void* staged, const Piece& p, float* out) {
      convert(staged, src.dtype, out, DType::F32, static_cast<size_t>(p.rows * p.cols));
    });
  }

  void download_i32(const Tensor& src, int32_t* dst) override {
    expect_tensor(src, DType::I32, "download_i32", "src");
    transfer_down(src, dst, [&](const void* staged, const Piece& p, int32_t* out) {
      std::memcpy(out, staged, static_cast<size_t>(p.rows * p.cols) * sizeof(int32_t));
    });
  }

  // Into a pinned buffer of its own per group (mark_downloads), packed, one
  // event: a step's two small result downloads, which the host reads while
  // the GPU goes on with the drafter's context write or the next step.
  void download_i32_later(const Tensor& src, int32_t* dst) override {
    expect_tensor(src, DType::I32, "download_i32_later", "src");
    if (src.empty()) return;
    if (!dst) fail("download_i32_later", "dst is null");
    const size_t bytes = static_cast<size_t>(src.rows * src.cols) * sizeof(int32_t);
    if (!later_.empty() && later_.back().open && later_.back().used + bytes > kSlotBytes) finish_downloads();
    if (bytes > kSlotBytes) return download_i32(src, dst);
    if (later_.empty() || !later_.back().open) {
      later_.emplace_back();
      if (!spare_.empty()) {
        later_.back().staging = spare_.back();
        spare_.pop_back();
      }
      allocated(later_.back().staging, kSlotBytes);
    }
    LaterGroup& g = later_.back();
    const Tensor t = flat(src);
    const size_t width = static_cast<size_t>(t.cols) * sizeof(int32_t);
    check(cudaMemcpy2DAsync(static_cast<char*>(g.staging.host) + g.used, width, element(t, 0, 0),
                            static_cast<size_t>(row_pitch(t)) * sizeof(int32_t), width, static_cast<size_t>(t.rows),
                            cudaMemcpyDeviceToHost, stream_),
          "download cudaMemcpy2DAsync");
    check(cudaEventRecord(g.staging.done, stream_), "download cudaEventRecord");
    g.items.push_back({dst, g.used, bytes});
    g.used += (bytes + 15) / 16 * 16;
  }

  uint64_t mark_downloads() override {
    if (!later_.empty() && later_.back().open) {
      later_.back().open = false;
      later_.back().mark = ++marks_;
    }
    return marks_;
  }

  void finish_downloads_to(uint64_t mark) override {
    while (!later_.empty() && !later_.front().open && later_.front().mark <= mark) land_front();
  }

  void finish_downloads() override {
    while (!later_.empty()) land_front();
  }

  void copy(const Tensor& src, const Tensor& dst) override {
    if (src.dtype != dst.dtype) return cuda::convert_rows(src, dst, stream_);
    expect_tensor(src, src.dtype, "copy", "src");
    expect_tensor(dst, src.dtype, "copy", "dst");
    expect_shape(dst, src.rows, src.cols, "copy", "dst");
    if (src.empty()) return;
    const size_t es = dtype_size(src.dtype);
    if (src.contiguous() && dst.contiguous()) {
      check(
          cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(src.numel()) * es, cudaMemcpyDeviceToDevice, stream_),
          "copy cudaMemcpyAsync");
    } else {
      check(cudaMemcpy2DAsync(dst.data, static_cast<size_t>(row_pitch(dst)) * es, src.data,
                              static_cast<size_t>(row_pitch(src)) * es, static_cast<size_t>(src.cols) * es,
                              static_cast<size_t>(src.rows), cudaMemcpyDeviceToDevice, stream_),
            "copy cudaMemcpy2DAsync");
    }
  }

  void fill_nan(const Tensor& t) override { cuda::fill_nan(t, stream_); }
  void fill_uniform(const Tensor& t, uint64_t seed, float lo, float hi) override {
    cuda::fill_uniform(t, seed, lo, hi, stream_);
  }
  void synchronize() override {
    check(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
    if (side_) check(cudaStreamSynchronize(side_), "cudaStreamSynchronize");
  }
  // The second queue: a stream of its own, forked from and joined to the
  // main one by events (inside a capture that makes the graph branch).
  void begin_beside() override {
    if (stream_ != main_) throw Error("CudaBackend: begin_beside inside another beside region");
    if (!side_) {
      check(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      check(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      check(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    }
    check(cudaEventRecord(fork_, main_), "begin_beside cudaEventRecord");
    check(cudaStreamWaitEvent(side_, fork_, 0), "begin_beside cudaStreamWaitEvent");
    stream_ = side_;
  }
  void end_beside() override {
    if (stream_ != side_) return;
    stream_ = main_;
    check(cudaEventRecord(join_, side_), "end_beside cudaEventRecord");
    joining_ = true;
  }
  void join_beside() override {
    if (!std::exchange(joining_, false)) return;
    check(cudaStreamWaitEvent(main_, join_, 0), "join_beside cudaStreamWaitEvent");
  }
  bool supports_graphs() const override { return true; }
  void* native_queue() const override { return stream_; }
  std::unique_ptr<Graph> capture(const std::function<void()>& work) override { return capture_graph(stream_, work); }

  void embedding(const Tensor& table, const Tensor& ids, const Tensor& out, float scale) override {
    cuda::embedding(table, ids, out, scale, stream_);
  }
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) override {
    if (w.layout == Layout::GluTiles)
      fail("matmul", "w is " + cuda::describe(w) + ": a [gate; up] weight only matmul_silu_glu reads");
    matmul_->run(x, w, bias, y, stream_);
  }
  // bf16 weights go tiled (matmul_tiles.h); the row-major copy is freed once
  // copied. Fp8: the rows are rounded in place first, and the fp8 codes of
  // the same values follow the tiles in the buffer (matmul_tiles.h), for the
  // 16-row streamer; longer calls read the bf16 tiles.
  void prepare_matmul_weight(OwnedTensor& w, WeightQuant quant) override {
    const bool fp8 = quant == WeightQuant::Fp8;
    if (w.t.empty()) return;
    if (w.t.dtype != DType::BF16 || w.t.layout != Layout::RowMajor) {
      if (fp8)
        fail("prepare_matmul_weight", "fp8 quantization of " + cuda::describe(w.t) + " (a row-major bf16 weight only)");
      return;
    }
    const auto tiles_bytes = static_cast<size_t>(matmul_tiles_bytes(w.t.rows, w.t.cols));
    OwnedTensor tiled;
    tiled.buffer = alloc(tiles_bytes + (fp8 ? static_cast<size_t>(fp8_twin_bytes(w.t.rows, w.t.cols)) : 0));
    tiled.t = w.t;
    tiled.t.data = tiled.buffer.data();
    tiled.t.ld = w.t.cols;
    tiled.t.layout = Layout::MatmulTiles;
    Buffer exps;  // fp8: each row's scale exponent, until the codes are packed
    if (fp8) {
      exps = alloc(static_cast<size_t>(w.t.rows));
      round_rows_fp8(w.t, static_cast<int8_t*>(exps.data()), stream_);
      pack_fp8_twin(w.t, static_cast<const int8_t*>(exps.data()),
                    static_cast<char*>(tiled.buffer.data()) + tiles_bytes, stream_);
      tiled.t.quant = WeightQuant::Fp8;
    }
    pack_matmul_tiles(w.t, tiled.t.data, stream_);
    synchronize();  // the row-major copy (and exps) may go
    w = std::move(tiled);
  }
  void matmul_weight_rows(const Tensor& w, const Tensor& dst) override {
    expect_shape(dst, w.rows, w.cols, "matmul_weight_rows", "dst");
    if (w.layout == Layout::RowMajor) return copy(w, dst);
    if (w.layout != Layout::MatmulTiles)
      fail("matmul_weight_rows", "w is " + cuda::describe(w) + ": a [gate; up] weight only matmul_silu_glu reads");
    unpack_matmul_tiles(w.data, dst, stream_);
  }
  // The [gate; up] rows regrouped in runs of kGluRun (gate run j, then up
  // run j), then tiled: one 128-row tile of the product holds both halves of
  // 64 outputs, which the GEMM's split fold finishes (Matmul::run_glu).
  // Otherwise (an odd intermediate size, a strided view): a plain tiled
  // weight, and matmul_silu_glu runs the two ops.
  void prepare_glu_weight(OwnedTensor& w, WeightQuant quant) override {
    const int64_t inter = w.t.rows / 2;
    if (w.t.dtype != DType::BF16 || w.t.layout != Layout::RowMajor || w.t.empty() || w.t.rows % 2 != 0 ||
        inter % kGluRun != 0 || w.t.ld != w.t.cols)
      return prepare_matmul_weight(w, quant);
    OwnedTensor runs = alloc_tensor(DType::BF16, w.t.rows, w.t.cols);
    const size_t run = static_cast<size_t>(kGluRun * w.t.cols) * dtype_size(DType::BF16);
    const auto* src = static_cast<const char*>(w.t.data);
    auto* dst = static_cast<char*>(runs.t.data);
    const auto height = static_cast<size_t>(inter / kGluRun);
    check(cudaMemcpy2DAsync(dst, 2 * run, src, run, run, height, cudaMemcpyDeviceToDevice, stream_),
          "prepare_glu_weight: gate runs");
    check(cudaMemcpy2DAsync(dst + run, 2 * run, src + height * run, run, run, height, cudaMemcpyDeviceToDevice,
                            stream_),
          "prepare_glu_weight: up runs");
    synchronize();
    w = std::move(runs);
    prepare_matmul_weight(w, quant);
    w.t.layout = Layout::GluTiles;
  }
  void rmsnorm(const Tensor& x, const Tensor& w, const Tensor& y, float eps) override {
    cuda::rmsnorm(x, w, y, eps, stream_);
  }
  void add_rmsnorm(const Tensor& residual, const Tensor& delta, const Tensor& w, const Tensor& y, float eps,
                   const Tensor* residual_out) override {
    cuda::add_rmsnorm(residual, delta, w, y, eps, residual_out, stream_);
  }
  void rope_store_kv(const Tensor& qkv, int64_t heads, int64_t kv_heads, int64_t head_dim, const Tensor* q_norm,
                     const Tensor* k_norm, const int32_t* positions, const Rope& rope, float eps, const int32_t* slots,
                     const Tensor& k_cache, const Tensor& v_cache) override {
    cuda::rope_store_kv(qkv, heads, kv_heads, head_dim, q_norm, k_norm, positions, rope, eps, slots, k_cache, v_cache,
                        stream_);
  }
  // Decode and verify rows (calls of up to 64 rows, which run split) get
  // their attention inputs from the GEMM's fold (Matmul::run_rope): one
  // kernel and one dependency fewer a layer. It
  // shares the rope kernel's arithmetic and lane layout (rope_math.cuh), so a
  // row's bits do not depend on which path ran it.
  void matmul_rope_store_kv(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& qkv, int64_t heads,
                            int64_t kv_heads, int64_t head_dim, const Tensor* q_norm, const Tensor* k_norm,
                            const int32_t* positions, const Rope& rope, float eps, const int32_t* slots,
                            const Tensor& k_cache, const Tensor& v_cache) override {
    cuda::check_rope_store_kv(qkv, heads, kv_heads, head_dim, q_norm, k_norm, positions, rope, slots, k_cache,
                              v_cache);
    if (head_dim == kRopeHeadDim &&
        cuda::rope_lane_elems(qkv, head_dim, q_norm, k_norm, k_cache, v_cache) == kRopeHeadDim / 32) {
      RopeEpilogue e;
      e.positions = positions;
      e.slots = slots;
      e.inv_freq = rope.inv_freq.as<float>();
      e.q_norm = q_norm ? q_norm->data : nullptr;
      e.k_norm = k_norm ? k_norm->data : nullptr;
      e.k_cache = k_cache.data;
      e.v_cache = v_cache.data;
      e.ldk = k_cache.ld;
      e.ldv = v_cache.ld;
      e.pool_rows = k_cache.rows;
      e.heads = static_cast<int>(heads);
      e.kv_heads = static_cast<int>(kv_heads);
      e.attention_factor = rope.attention_factor;
      e.eps = eps;
      if (matmul_->run_rope(x, w, bias, qkv, e, stream_)) return;
    }
    matmul(x, w, bias, qkv);
    rope_store_kv(qkv, heads, kv_heads, head_dim, q_norm, k_norm, positions, rope, eps, slots, k_cache, v_cache);
  }
  void silu_glu(const Tensor& gate_up, const Tensor& out) override { cuda::silu_glu(gate_up, out, stream_); }
  // Decode and verify rows (up to 64 a call) get silu_glu's output from the
  // gate_up GEMM's fold (Matmul::run_glu): the silu kernel and its
  // dependency go. Other
  // calls over a GluTiles weight write gate_up in its runs and the silu
  // kernel reads it so. Both share glu_math.cuh: the same bits either way.
  void matmul_silu_glu(const Tensor& x, const Tensor& w, const Tensor& gate_up, const Tensor& out) override {
    if (w.layout != Layout::GluTiles) return Backend::matmul_silu_glu(x, w, gate_up, out);
    if (matmul_->run_glu(x, w, out, stream_)) return;
    matmul_->run(x, w, nullptr, gate_up, stream_);
    cuda::silu_glu(gate_up, out, stream_, kGluRun);
  }
  void paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                       const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads, int64_t n_kv_heads,
                       int64_t head_dim, float scale) override {
    cuda::paged_attention(q, k_cache, v_cache, out, batch, mask, n_heads, n_kv_heads, head_dim, scale,
                          attention_workspace_, stream_);
  }
  void gather_rows(const Tensor& src, const int32_t* rows, const Tensor& dst) override {
    cuda::gather_rows(src, rows, dst, stream_);
  }
  void scatter_rows(const Tensor& src, const int32_t* rows, const Tensor& dst) override {
    cuda::scatter_rows(src, rows, dst, stream_);
  }
  void softcap(const Tensor& x, float cap) override { cuda::softcap(x, cap, stream_); }
  void argmax(const Tensor& x, const Tensor& out) override { cuda::argmax(x, out, stream_); }
  void argmax_key(const Tensor& x, int64_t offset, const Tensor& keys) override {
    cuda::argmax_key(x, offset, keys, stream_);
  }
  void sample(const Tensor& logits, const Tensor& rows, const Tensor& out) override {
    cuda::sample(logits, rows, out, stream_);
  }
  void accept(const Tensor& logits, const Tensor& rows, const Tensor& seq_start, const Tensor& tokens,
              const Tensor& out) override {
    cuda::accept(logits, rows, seq_start, tokens, out, stream_);
  }
  void penalize(const Tensor& logits, const Tensor& rows, const Tensor& items, const Tensor& drafts) override {
    cuda::penalize(logits, rows, items, drafts, stream_);
  }
  void carry_forward(const Tensor& verdicts, const Tensor& lag, const Tensor& fixes) override {
    cuda::carry_forward(verdicts, lag, fixes, stream_);
  }

 private:
  // s with its pinned memory (`bytes`) and event, made on first use.
  static Staging& allocated(Staging& s, size_t bytes) {
    if (!s.host) {
      check(cudaMallocHost(&s.host, bytes), "cudaMallocHost (staging buffer)");
      check(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "cudaEventCreate");
    }
    return s;
  }
  Staging& slot() {
    Staging& s = slots_[next_slot_];
    next_slot_ = (next_slot_ + 1) % kSlots;
    return allocated(s, kSlotBytes);
  }
  Staging& staging(int i) { return allocated(staging_[i], kStagingBytes); }

  // Device view -> staging (pinned) -> `unpack` into dst, one piece at a time,
  // with the next piece's copy queued before the current one is unpacked.
  template <class Out, class Unpack>
  void transfer_down(const Tensor& src, Out* dst, Unpack unpack) {
    if (src.empty()) return;
    if (!dst) fail("download", "dst is null");
    const Tensor t = flat(src);
    const size_t es = dtype_size(t.dtype);
    const std::vector<Piece> ps = pieces(t, kStagingBytes);
    auto enqueue = [&](size_t i) {
      const Piece& p = ps[i];
      Staging& s = staging(static_cast<int>(i % 2));
      check(cudaEventSynchronize(s.done), "download: waiting for a staging buffer");
      const size_t width = static_cast<size_t>(p.cols) * es;
      check(cudaMemcpy2DAsync(s.host, width, element(t, p.r0, p.c0), static_cast<size_t>(row_pitch(t)) * es, width,
                              static_cast<size_t>(p.rows), cudaMemcpyDeviceToHost, stream_),
            "download cudaMemcpy2DAsync");
      check(cudaEventRecord(s.done, stream_), "download cudaEventRecord");
    };
    enqueue(0);
    for (size_t i = 0; i < ps.size(); ++i) {
      if (i + 1 < ps.size()) enqueue(i + 1);
      Staging& s = staging_[i % 2];
      check(cudaEventSynchronize(s.done), "download: waiting for the copy");
      const Piece& p = ps[i];
      unpack(s.host, p, dst + p.r0 * t.cols + p.c0);
    }
  }

  int index_;
  std::string name_;
  // Where ops go: the main stream, or the side stream inside a beside region.
  cudaStream_t stream_ = nullptr;
  cudaStream_t main_ = nullptr, side_ = nullptr;
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
  bool joining_ = false;  // end_beside() ran, join_beside() not yet
  std::unique_ptr<Matmul> matmul_;
  AttentionWorkspace attention_workspace_;
  Staging staging_[2];
  Staging slots_[kSlots];
  int next_slot_ = 0;
  // download_i32_later's copies in flight, in groups (mark_downloads), oldest
  // first, the last one open while no mark has closed it: where each copy
  // lands in its group's pinned buffer. Buffers of landed groups are reused.
  struct Later {
    int32_t* dst;
    size_t at, bytes;
  };
  struct LaterGroup {
    Staging staging;
    std::vector<Later> items;
    size_t used = 0;
    bool open = true;
    uint64_t mark = 0;
  };
  void land_front() {
    LaterGroup& g = later_.front();
    check(cudaEventSynchronize(g.staging.done), "download: waiting for the copies");
    for (const Later& l : g.items) std::memcpy(l.dst, static_cast<const char*>(g.staging.host) + l.at, l.bytes);
    spare_.push_back(g.staging);
    later_.pop_front();
  }
  std::deque<LaterGroup> later_;
  std::vector<Staging> spare_;
  uint64_t marks_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int index) { return std::make_unique<CudaBackend>(index); }

}  // namespace flashdraft::ops::cuda
