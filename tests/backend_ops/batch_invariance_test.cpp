// Batch invariance, bit for bit, on every backend: a row's result must not
// depend on how many rows share the call or which requests share the batch.
// Greedy DFlash equals plain decoding only because of this: a verify row (one
// of 16, next to other requests' rows) must give exactly the logits the same
// row gets when plain decoding runs it alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend_named.h"
#include "ops/backend.h"

namespace flashdraft::ops {
namespace {

using testing::backend_named;

std::vector<float> random_vec(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

std::vector<float> download(Backend& be, const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  be.download(t, v.data());
  return v;
}

bool same_bits(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, sizeof(float) * n) == 0; }

class BatchInvariance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    be_ = backend_named(GetParam());
    if (!be_) GTEST_SKIP() << "no CUDA device on this machine (or a build without CUDA)";
  }
  OwnedTensor upload(const std::vector<float>& v, int64_t rows, int64_t cols, DType dt) {
    auto t = be_->alloc_tensor(dt, rows, cols);
    be_->upload(t.t, v.data(), DType::F32);
    return t;
  }
  OwnedTensor upload_i32(const std::vector<int32_t>& v) {
    auto t = be_->alloc_tensor(DType::I32, static_cast<int64_t>(v.size()), 1);
    be_->upload(t.t, v.data(), DType::I32);
    return t;
  }
  // The two tests below, once per weight quantization (plain, and fp8: a
  // quantized drafter's, which CUDA reads from fp8 codes up to 16 rows).
  void attention_inputs(WeightQuant quant);
  void glu_rows(WeightQuant quant);
  std::shared_ptr<Backend> be_;
};

// The CUDA GEMM picks its kernel (a weight streamer, tiles of 32/64/128 rows,
// a split over K or not) per call from the row count: every choice is met
// here, up to a 2048-row prefill chunk (300 rows on the slower CPU reference).
TEST_P(BatchInvariance, MatmulRowDoesNotDependOnRowCount) {
  Backend& be = *be_;
  const DType dt = be.activation_dtype();
  struct Shape {
    int64_t in, out;
    bool f32;  // logits
  };
  for (const Shape s : {Shape{4096, 6144, false}, {384, 1152, false}, {12288, 4096, false}, {4096, 32768, true}}) {
    if (s.f32 && GetParam() == "cpu") continue;  // its matmul has one output dtype
    const int64_t in = s.in, out = s.out, n = GetParam() == "cpu" ? 300 : 2048;
    const DType yt = s.f32 ? DType::F32 : dt;
    auto x = upload(random_vec(static_cast<size_t>(n * in), 1), n, in, dt);
    auto w = upload(random_vec(static_cast<size_t>(out * in), 2, 0.02f), out, in, be.weight_dtype());
    auto y = be.alloc_tensor(yt, n, out);
    be.matmul(x.t, w.t, nullptr, y.t);
    const auto all = download(be, y.t);
    // The models' weights are prepared for the backend's matmul (tiled on
    // CUDA): the same bits as from the row-major weight, and every row count
    // below reads the prepared one.
    be.prepare_matmul_weight(w);
    be.matmul(x.t, w.t, nullptr, y.t);
    EXPECT_TRUE(same_bits(download(be, y.t).data(), all.data(), n * out))
        << in << "x" << out << ": the prepared weight gives other bits than the row-major one";
    for (int64_t rows : {1, 2, 16, 17, 48, 128, 300}) {
      for (int64_t r0 : {int64_t{0}, n - rows}) {
        auto part = be.alloc_tensor(yt, rows, out);
        be.matmul(x.t.row_slice(r0, rows), w.t, nullptr, part.t);
        const auto got = download(be, part.t);
        EXPECT_TRUE(same_bits(got.data(), all.data() + r0 * out, rows * out))
            << in << "x" << out << ": rows [" << r0 << ", " << r0 + rows << ") alone differ from the same rows in "
            << n;
      }
    }
  }
}

// A quantized drafter's weight (WeightQuant::Fp8): every row count must give
// the bits of a plain row-major weight holding the rounded values, whether
// the backend reads them as bf16 tiles or (CUDA, up to 16 rows) widens them
// from their fp8 codes.
TEST_P(BatchInvariance, Fp8MatmulRowsAreThoseOfTheRoundedWeight) {
  Backend& be = *be_;
  const DType dt = be.activation_dtype();
  struct Shape {
    int64_t in, out;
    bool f32;
  };
  for (const Shape s : {Shape{4096, 6144, false}, {392, 1001, false}, {20480, 4096, false}, {4096, 32768, true}}) {
    if (GetParam() == "cpu" && (s.f32 || s.in * s.out > 1'000'000)) continue;  // the CPU: its rounding and rows only
    const int64_t in = s.in, out = s.out, n = GetParam() == "cpu" ? 40 : 300;
    const DType yt = s.f32 ? DType::F32 : dt;
    auto x = upload(random_vec(static_cast<size_t>(n * in), 3), n, in, dt);
    auto w = upload(random_vec(static_cast<size_t>(out * in), 4, 0.02f), out, in, be.weight_dtype());
    be.prepare_matmul_weight(w, WeightQuant::Fp8);
    ASSERT_EQ(w.t.quant, WeightQuant::Fp8);
    auto rounded = be.alloc_tensor(be.weight_dtype(), out, in);
    be.matmul_weight_rows(w.t, rounded.t);
    auto y = be.alloc_tensor(yt, n, out);
    be.matmul(x.t, rounded.t, nullptr, y.t);
    const auto all = download(be, y.t);
    for (int64_t rows : {1, 2, 15, 16, 17, 40, 300}) {
      if (rows > n) continue;
      for (int64_t r0 : {int64_t{0}, n - rows}) {
        auto part = be.alloc_tensor(yt, rows, out);
        be.matmul(x.t.row_slice(r0, rows), w.t, nullptr, part.t);
        EXPECT_TRUE(same_bits(download(be, part.t).data(), all.data() + r0 * out, rows * out))
            << in << "x" << out << ": rows [" << r0 << ", " << r0 + rows
            << ") over the fp8 weight differ from the same rows over its rounded values";
      }
    }
  }
}

// A row's attention inputs (matmul_rope_store_kv: q rotated in qkv, k and v
// in the pool) must not depend on the row count either: CUDA finishes calls
// of up to 16 rows (decode, verify) in the qkv GEMM's fold and longer ones
// with the separate rope kernel, and the two must agree bit for bit.
TEST_P(BatchInvariance, AttentionInputsDoNotDependOnRowCount) {
  for (const WeightQuant quant : {WeightQuant::None, WeightQuant::Fp8}) {
    SCOPED_TRACE(std::string("weight quantization ") + weight_quant_name(quant));
    attention_inputs(quant);
  }
}

void BatchInvariance::attention_inputs(WeightQuant quant) {
  Backend& be = *be_;
  const DType dt = be.activation_dtype(), wt = be.weight_dtype();
  const int64_t hidden = 4096, nh = 32, nkv = 8, hd = 128, kv = nkv * hd, width = (nh + 2 * nkv) * hd, n = 48;
  auto x = upload(random_vec(static_cast<size_t>(n * hidden), 11), n, hidden, dt);
  auto w = upload(random_vec(static_cast<size_t>(width * hidden), 12, 0.02f), width, hidden, wt);
  be.prepare_matmul_weight(w, quant);
  auto q_norm = upload(random_vec(hd, 13), 1, hd, wt), k_norm = upload(random_vec(hd, 14), 1, hd, wt);
  std::vector<float> inv_freq(hd / 2);
  for (int64_t i = 0; i < hd / 2; ++i)
    inv_freq[static_cast<size_t>(i)] = static_cast<float>(std::pow(1e6, -2.0 * static_cast<double>(i) / hd));
  auto freq = upload(inv_freq, 1, hd / 2, DType::F32);
  const Rope rope{freq.t, 1.0f};
  // Positions up to 32k (large angles), slots distinct and out of row order.
  std::vector<int32_t> positions(n), slots(n);
  for (int64_t r = 0; r < n; ++r) {
    positions[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7919) % 32768);
    slots[static_cast<size_t>(r)] = static_cast<int32_t>(3 * (n - 1 - r) + 1);
  }
  auto pos = upload_i32(positions), slot = upload_i32(slots);
  const int64_t pool = 3 * n + 1;
  struct Inputs {
    std::vector<float> qkv, k, v;
  };
  const auto run = [&](int64_t r0, int64_t rows) {
    auto qkv = be.alloc_tensor(dt, rows, width);
    auto k = be.alloc_tensor(dt, pool, kv), v = be.alloc_tensor(dt, pool, kv);
    be.matmul_rope_store_kv(x.t.row_slice(r0, rows), w.t, nullptr, qkv.t, nh, nkv, hd, &q_norm.t, &k_norm.t,
                            pos.t.as<int32_t>() + r0, rope, 1e-6f, slot.t.as<int32_t>() + r0, k.t, v.t);
    return Inputs{download(be, qkv.t), download(be, k.t), download(be, v.t)};
  };
  const Inputs all = run(0, n);
  for (int64_t rows : {1, 2, 16, 17}) {
    for (int64_t r0 : {int64_t{0}, int64_t{5}, n - rows}) {
      const Inputs part = run(r0, rows);
      EXPECT_TRUE(same_bits(part.qkv.data(), all.qkv.data() + r0 * width, rows * width))
          << "qkv of rows [" << r0 << ", " << r0 + rows << ") alone differs from the same rows in " << n;
      for (int64_t r = r0; r < r0 + rows; ++r) {
        const int64_t at = slots[static_cast<size_t>(r)] * kv;
        EXPECT_TRUE(same_bits(part.k.data() + at, all.k.data() + at, kv)) << "k of row " << r << ", " << rows;
        EXPECT_TRUE(same_bits(part.v.data() + at, all.v.data() + at, kv)) << "v of row " << r << ", " << rows;
      }
    }
  }
}

// Likewise the MLP's first half (matmul_silu_glu): CUDA folds up to 64 rows
// straight into silu_glu's output in the split GEMM's fold and runs longer
// calls (here 200 rows: the persistent 128-row tile) through gate_up in runs
// of 64 and the silu kernel; the CPU reference is checked on 48 rows.
TEST_P(BatchInvariance, GluRowDoesNotDependOnRowCount) {
  for (const WeightQuant quant : {WeightQuant::None, WeightQuant::Fp8}) {
    SCOPED_TRACE(std::string("weight quantization ") + weight_quant_name(quant));
    glu_rows(quant);
  }
}

void BatchInvariance::glu_rows(WeightQuant quant) {
  Backend& be = *be_;
  const DType dt = be.activation_dtype();
  const int64_t in = 4096, inter = 12288, n = GetParam() == "cpu" ? 48 : 200;
  auto x = upload(random_vec(static_cast<size_t>(n * in), 21), n, in, dt);
  auto w = upload(random_vec(static_cast<size_t>(2 * inter * in), 22, 0.02f), 2 * inter, in, be.weight_dtype());
  be.prepare_glu_weight(w, quant);
  const auto run = [&](int64_t r0, int64_t rows) {
    auto gate_up = be.alloc_tensor(dt, rows, 2 * inter), out = be.alloc_tensor(dt, rows, inter);
    be.matmul_silu_glu(x.t.row_slice(r0, rows), w.t, gate_up.t, out.t);
    return download(be, out.t);
  };
  const auto all = run(0, n);
  for (int64_t rows : {1, 2, 16, 17})
    for (int64_t r0 : {int64_t{0}, int64_t{5}, n - rows})
      EXPECT_TRUE(same_bits(run(r0, rows).data(), all.data() + r0 * inter, rows * inter))
          << "rows [" << r0 << ", " << r0 + rows << ") alone differ from the same rows in " << n;
}

// One row of interest (query q0, position C) in a sequence computed alone and
// among others, as a decode row, row 0 of a 16-row block, or a row inside a
// prefill chunk of another size and start (the keys before it are the same
// pool data every time); its output must come out identical every time.
TEST_P(BatchInvariance, AttentionRowDoesNotDependOnTheBatch) {
  // The CPU reference takes a direct path for 1-3 rows and a GEMM path for
  // more: equal to fp32 rounding, not bit for bit (its lossless tests hold at
  // fp32); the bf16 GPU backend needs the exact property.
  if (GetParam() == "cpu") GTEST_SKIP() << "the CPU reference is invariant to rounding only";
  Backend& be = *be_;
  const DType dt = be.activation_dtype();
  const int64_t nh = 32, nkv = 8, hd = 128, bs = 16, kv = nkv * hd, q_dim = nh * hd;
  // Pool: the sequence of interest owns blocks [0, 300); 7 others own theirs after.
  const std::vector<int32_t> others_ctx = {5000, 17, 1200, 64, 2999, 300, 8191};
  int32_t next_block = 300;
  std::vector<std::vector<int32_t>> tables(1 + others_ctx.size());
  for (int32_t b = 0; b < 300; ++b) tables[0].push_back(b);
  for (size_t o = 0; o < others_ctx.size(); ++o)
    for (int32_t b = 0; b * bs < others_ctx[o] + 16; ++b) tables[o + 1].push_back(next_block++);
  const int64_t slots = int64_t{next_block} * bs;
  auto k = upload(random_vec(static_cast<size_t>(slots * kv), 3), slots, kv, dt);
  auto v = upload(random_vec(static_cast<size_t>(slots * kv), 4), slots, kv, dt);
  // Query rows: the row of interest always takes row kAnchor of q_host.
  const int64_t kAnchor = 1100, kQRows = 2400;
  const auto q_host = random_vec(static_cast<size_t>(kQRows * q_dim), 5);

  // The sequence of interest gets `rows` rows from position C - at (row `at`
  // is the row of interest), then (if crowd) each other sequence 16 rows.
  int32_t C = 0;
  // keys_bucket: max_keys stated that high, as a recorded step states its context bucket.
  const auto run = [&](int32_t rows, int32_t at, bool crowd, const AttentionMask& mask, int32_t keys_bucket = 0) {
    std::vector<int32_t> q_start = {0}, pos0, bt, positions;
    const size_t n_seqs = crowd ? tables.size() : 1;
    const int32_t max_blocks = 600;
    for (size_t s = 0; s < n_seqs; ++s) {
      const int32_t p0 = s == 0 ? C - at : others_ctx[s - 1];
      const int32_t r = s == 0 ? rows : 16;
      pos0.push_back(p0);
      q_start.push_back(q_start.back() + r);
      std::vector<int32_t> t = tables[s];
      t.resize(max_blocks, 0);
      bt.insert(bt.end(), t.begin(), t.end());
      for (int32_t i = 0; i < r; ++i) positions.push_back(p0 + i);
    }
    const int32_t n_rows = q_start.back();
    auto qs = be.alloc_tensor(DType::I32, n_seqs + 1, 1), ps = be.alloc_tensor(DType::I32, n_seqs, 1);
    auto bts = upload_i32(bt), pos = upload_i32(positions);
    be.upload(qs.t, q_start.data(), DType::I32);
    be.upload(ps.t, pos0.data(), DType::I32);
    int32_t max_keys = 0, max_rows = 0;
    for (size_t s = 0; s < n_seqs; ++s) {
      max_keys = std::max(max_keys, pos0[s] + q_start[s + 1] - q_start[s]);
      max_rows = std::max(max_rows, q_start[s + 1] - q_start[s]);
    }
    max_keys = std::max(max_keys, keys_bucket);
    AttnBatch batch{static_cast<int32_t>(n_seqs), n_rows, max_rows, max_keys, max_blocks, static_cast<int32_t>(bs),
                    qs.t.as<int32_t>(), ps.t.as<int32_t>(), bts.t.as<int32_t>(), pos.t.as<int32_t>(), nullptr};
    const int64_t q0 = kAnchor - at;
    EXPECT_LE(q0 + n_rows, kQRows);
    auto q = upload(std::vector<float>(q_host.begin() + q0 * q_dim, q_host.begin() + (q0 + n_rows) * q_dim), n_rows,
                    q_dim, dt);
    auto out = be.alloc_tensor(dt, n_rows, q_dim);
    be.paged_attention(q.t, k.t, v.t, out.t, batch, mask, nh, nkv, hd, 0.088f);
    return download(be, out.t.row_slice(at, 1));
  };
  // Prefill chunks around the row: (rows, index of the row of interest). Splits
  // restart every 128 keys up to 1024, every 256 up to 4096, then every 512:
  // chunks that start inside a split, at one (2560) and span several (and, at
  // C = 4500, span the 256 -> 512 change at 4096), and chunks whose
  // 32-position M tiles are aligned differently.
  const std::vector<std::pair<int32_t, int32_t>> chunks = {{256, 100}, {1100, 1000}, {500, 441}, {77, 13}};
  for (const int32_t at_position : {3001, 4500}) {
    for (const auto& [name, mask] : {std::pair<const char*, AttentionMask>{"causal", AttentionMask{true, 0}},
                                     {"sliding 2048", AttentionMask{true, 2048}}}) {
      C = at_position;
      SCOPED_TRACE(std::string(name) + " at position " + std::to_string(C));
      const auto decode = run(1, 0, false, mask);
      EXPECT_TRUE(same_bits(run(16, 0, false, mask).data(), decode.data(), q_dim)) << "verify row 0 vs decode";
      EXPECT_TRUE(same_bits(run(1, 0, true, mask).data(), decode.data(), q_dim)) << "decode among 7 others";
      EXPECT_TRUE(same_bits(run(16, 0, true, mask).data(), decode.data(), q_dim)) << "verify row 0 among 7 others";
      for (const int32_t bucket : {8192, 16384})
        EXPECT_TRUE(same_bits(run(16, 0, false, mask, bucket).data(), decode.data(), q_dim))
            << "verify row 0 in a step recorded for " << bucket << " keys";
      for (const auto& [rows, at] : chunks) {
        EXPECT_TRUE(same_bits(run(rows, at, false, mask).data(), decode.data(), q_dim))
            << "row " << at << " of a " << rows << "-row prefill chunk vs decode";
        EXPECT_TRUE(same_bits(run(rows, at, true, mask).data(), decode.data(), q_dim))
            << "row " << at << " of a " << rows << "-row prefill chunk among 7 others vs decode";
      }
    }
  }
  // Drafter blocks: full_attention, and non-causal sliding windows shorter and longer than the block.
  for (const int64_t window : {0, 8, 2048}) {
    const AttentionMask block{false, window};
    const auto alone = run(16, 0, false, block);
    EXPECT_TRUE(same_bits(run(16, 0, true, block).data(), alone.data(), q_dim))
        << "block among 7 others, window " << window;
    EXPECT_TRUE(same_bits(run(16, 0, false, block, 16384).data(), alone.data(), q_dim))
        << "block in a step recorded for 16384 keys, window " << window;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchInvariance, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace flashdraft::ops
