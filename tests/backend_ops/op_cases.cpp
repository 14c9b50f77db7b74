#include "op_cases.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <tuple>

#include "core/error.h"
#include "ops/ops.h"

namespace flashdraft::ops::testing {

const char* op_name(Op op) {
  switch (op) {
    case Op::Embedding: return "embedding";
    case Op::Matmul: return "matmul";
    case Op::RmsNorm: return "rmsnorm";
    case Op::AddRmsNorm: return "add_rmsnorm";
    case Op::RopeStoreKv: return "rope_store_kv";
    case Op::MatmulRopeStoreKv: return "matmul_rope_store_kv";
    case Op::MatmulSiluGlu: return "matmul_silu_glu";
    case Op::SiluGlu: return "silu_glu";
    case Op::GatherRows: return "gather_rows";
    case Op::ScatterRows: return "scatter_rows";
    case Op::Softcap: return "softcap";
    case Op::Argmax: return "argmax";
    case Op::Sample: return "sample";
    case Op::Accept: return "accept";
    case Op::Penalize: return "penalize";
    case Op::PagedAttention: return "paged_attention";
    case Op::Copy: return "copy";
    case Op::CarryForward: return "carry_forward";
  }
  return "?";
}

namespace {

constexpr float kEps = 1e-6f;
constexpr double kRopeTheta = 1e6;  // Qwen3's
// Columns the strided views leave on each side: 16-byte aligned starts and
// row strides, like a column slice of a fused buffer.
constexpr int64_t kPadLeft = 64, kPadRight = 64;

// Error bounds for a bf16 backend against the f32 reference (inputs already
// bf16-exact, so only the op's own roundings count). Rounding a value to bf16
// (8 significant bits) leaves a relative error of mean square ~2.8e-6
// (uniform error of half an ulp, averaged over the significand); the bounds
// are that times the number of roundings on the op's path, with ~3x margin.
constexpr double kOneRounding = 1e-5;
constexpr double kTwoRoundings = 2e-5;

double bf16_bound(const OpCase& c) {
  switch (c.op) {
    // One rounding: table[id] * scale in f32, rounded once (none into the f32 residual stream).
    case Op::Embedding: return c.f32 ? 0.0 : kOneRounding;
    // bf16 y: one rounding of an f32-accumulated dot product (f32 summation
    // error over K <= 12288 terms is ~1e-11). f32 y (logits): no rounding at
    // all, only the summation order differs; 1e-8 still catches a result that
    // went through bf16 on its way (~3e-6).
    case Op::Matmul: return c.f32 ? 1e-8 : kOneRounding;
    // One rounding of y; the statistics are f32.
    case Op::RmsNorm: return kOneRounding;
    // The residual is f32 on every backend (the same f32 sum), y one rounding.
    case Op::AddRmsNorm: return kOneRounding;
    // One rounding of each f32 value.
    case Op::Copy: return kOneRounding;
    // q and k: one rounding (the norm and the rotation stay in f32), bounded
    // as two for margin; v is copied exactly. The angle is the same f32
    // product pos * inv_freq on both sides, so positions up to 32k cost only
    // cos/sin's last-ulp differences; a fast __sinf of a 32k angle (error
    // ~1e-3) would not pass.
    case Op::RopeStoreKv: return kTwoRoundings;
    // The projection's rounding (the k and v columns: that one only), then
    // rope_store_kv's on q and k: two roundings, bounded as four.
    case Op::MatmulRopeStoreKv: return 2 * kTwoRoundings;
    // gate and up rounded by the projection, the product once more: three
    // roundings, bounded as four.
    case Op::MatmulSiluGlu: return 2 * kTwoRoundings;
    // One rounding of silu(g) * u computed in f32.
    case Op::SiluGlu: return kOneRounding;
    // Copies of bf16-exact values: exact.
    case Op::GatherRows:
    case Op::ScatterRows: return 0.0;
    // f32 in and out: only tanhf's last ulps differ (~1e-14). An approximate
    // tanh (tanh.approx.f32, ~2^-11 relative) gives ~1e-7 and fails on purpose:
    // logits must stay f32-accurate.
    case Op::Softcap: return 1e-9;
    // Compared exactly (inputs have a clear winner or exact f32 ties).
    case Op::Argmax: return 0.0;
    // Tokens, compared exactly: both backends compute every weight with the
    // same float operations (ops/sample_math.h) and differ only in the order
    // they add doubles, which moves a draw only when u * total falls within
    // ~1e-16 of the total from the edge between two tokens (~1e-12 a row).
    case Op::Sample:
    case Op::Accept: return 0.0;
    // Bit for bit: the same IEEE operations, each logit owned by one thread
    // (ops/penalty_math.h).
    case Op::Penalize: return 0.0;
    // Integer edits: exact.
    case Op::CarryForward: return 0.0;
    // Scores from bf16-exact q and k accumulate in f32; flash kernels round the
    // probabilities P to bf16 for the tensor-core P.V product (each p off by
    // ~2^-9, giving an NMSE of about one rounding) and round the output: ~6e-6
    // expected. 1e-4 leaves margin while a mask off by one key (an extra or
    // missing key among the <= 64 a small window or an early prefill row sees)
    // costs > 1e-3.
    case Op::PagedAttention: return 1e-4;
  }
  return 0.0;
}

std::string seqs_label(const std::vector<SeqRows>& seqs) {
  int32_t max_ctx = 0;
  std::set<int32_t> rows;
  for (const SeqRows& s : seqs) {
    max_ctx = std::max(max_ctx, s.context);
    rows.insert(s.rows);
  }
  std::string q = rows.size() == 1 ? "q" + std::to_string(*rows.begin()) : std::string("qmixed");
  return q + "x" + std::to_string(seqs.size()) + "_ctx" + std::to_string(max_ctx);
}

// splitmix64: fast enough for the 600M-element logits weight.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1p-24f; }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  std::vector<float> uniform(size_t n, float lo, float hi) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }

 private:
  uint64_t s_;
};

float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // NaN / inf: keep
  u += 0x7fffu + ((u >> 16) & 1u);                 // round to nearest even
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace

struct CaseData {
  std::vector<float> x, w, bias, residual, delta, norm_q, norm_k, inv_freq, k_pool, v_pool;
  std::vector<int32_t> ids;
  HostAttnBatch attn;
  std::vector<int32_t> sample_rows, seq_start;  // sample / accept: SampleRow words; sequence starts
  std::vector<int32_t> penalty_items, drafts;    // penalize (its PenaltyRow words in sample_rows)
  // carry_forward: the words edited (in ids), the verdicts (in drafts), the
  // lag (empty: none), and each fix as {dst, table (word offsets into ids),
  // verdict, kind, shift, value, count, stride, block_size}: bound to a
  // backend's addresses when bound.
  std::vector<int32_t> fixes, lag;
};

namespace {

// Row r's filters: the settings a serving request asks for, cycled so every
// path of the kernel (no filter, each one alone, all together, k = 1, a
// nucleus of one, a k past most of the vocabulary) meets every kind of row.
SampleRow sample_row_params(int64_t r, bool greedy) {
  struct Mix {
    float t;
    int32_t k;
    float p, min_p;
  };
  static constexpr Mix kMix[] = {{1.0f, 0, 1.0f, 0.0f},    {0.7f, 50, 1.0f, 0.0f},     {0.8f, 0, 0.9f, 0.0f},
                                 {1.0f, 0, 1.0f, 0.05f},   {0.6f, 20, 0.95f, 0.0f},    {1.3f, 1000, 0.5f, 0.01f},
                                 {1.0f, 1, 1.0f, 0.0f},    {0.9f, 0, 1e-6f, 0.0f},     {0.0f, 0, 1.0f, 0.0f},
                                 {1.0f, 100000, 0.99f, 0.0f}, {2.0f, 0, 0.999f, 0.001f}};
  const Mix m = greedy ? Mix{0.0f, 0, 1.0f, 0.0f} : kMix[r % std::size(kMix)];
  SampleRow p;
  p.temperature = m.t;
  p.top_k = m.k;
  p.top_p = m.p;
  p.min_p = m.min_p;
  return p;
}

// Logits rows of four kinds, by row: a flat tail in [-4, 4) (at temperature 1
// a nucleus of ~100k tokens); a few tokens 8-12 above the tail (a nucleus of
// a few); coarse values in steps of 0.25 (ties at every threshold); peaks and
// masked (-inf) tokens. Accept's rows always have peaks, and their drafts
// are the row's argmax three times in four (long accepted runs), else any id.
void make_sample_data(const OpCase& c, Rng& rng, CaseData& d) {
  std::vector<int32_t> rows_per_seq;
  for (const SeqRows& s : c.seqs) rows_per_seq.push_back(s.rows);
  if (c.op == Op::Sample) rows_per_seq.assign(static_cast<size_t>(c.n), 1);
  int64_t total = 0;
  for (int32_t r : rows_per_seq) total += r;
  d.x = rng.uniform(static_cast<size_t>(total * c.dim), -4.0f, 4.0f);
  d.seq_start = {0};
  int64_t r = 0;
  for (int32_t seq_rows : rows_per_seq) {
    const auto pos0 = static_cast<int32_t>(rng.below(1 << 20));
    const uint64_t seed = rng.next();
    for (int32_t i = 0; i < seq_rows; ++i, ++r) {
      float* row = d.x.data() + r * c.dim;
      const int64_t kind = r % 4;
      if (kind == 2)
        for (int64_t j = 0; j < c.dim; ++j) row[j] = std::round(row[j] * 4.0f) / 4.0f;
      if (kind == 1 || kind == 3 || c.op == Op::Accept)
        for (int p = 0; p < 4; ++p) row[rng.below(c.dim)] = rng.uniform(8.0f, 12.0f);
      if (kind == 3)
        for (int64_t m = 0; m < c.dim / 8; ++m) row[rng.below(c.dim)] = -INFINITY;
      SampleRow p = sample_row_params(r, c.greedy);
      p.seed_lo = static_cast<uint32_t>(seed);
      p.seed_hi = static_cast<uint32_t>(seed >> 32);
      p.position = pos0 + i + 1;
      if (i + 1 < seq_rows)
        p.draft = rng.below(4) != 0 ? static_cast<int32_t>(cpu::argmax(row, c.dim)) : static_cast<int32_t>(rng.below(c.dim));
      int32_t words[SampleRow::kWords];
      std::memcpy(words, &p, sizeof p);
      d.sample_rows.insert(d.sample_rows.end(), words, words + SampleRow::kWords);
    }
    d.seq_start.push_back(static_cast<int32_t>(r));
  }
}

// Penalize: sequences of rows as a step has them (verify blocks, single
// decode rows). Each sequence gets a sorted item list (prompt-only tokens,
// output tokens with counts, bias-only tokens, biases of +-100 and small
// ones) and drafts that repeat, hit items and miss them; row j of a sequence
// adds its first j drafts. Row settings cycle through no-op rows, each
// penalty alone, all together, and penalties below 1 / negative. Logits hold
// exact zeros and both signs, where the repetition rule switches.
void make_penalty_data(const OpCase& c, Rng& rng, CaseData& d) {
  struct Mix {
    float rep, freq, pres;
  };
  static constexpr Mix kMix[] = {{1.0f, 0.0f, 0.0f}, {1.3f, 0.0f, 0.0f}, {1.0f, 0.5f, 0.0f}, {1.0f, 0.0f, 1.5f},
                                 {1.1f, 0.7f, 0.3f}, {0.8f, -0.4f, -1.0f}, {2.0f, 2.0f, 2.0f}};
  int64_t total = 0;
  for (const SeqRows& s : c.seqs) total += s.rows;
  d.x = rng.uniform(static_cast<size_t>(total * c.dim), -4.0f, 4.0f);
  for (size_t i = 0; i < d.x.size(); i += 7) d.x[i] = 0.0f;
  int64_t r = 0;
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const int32_t rows = c.seqs[s].rows;
    // Items: a sorted unique subset of the vocabulary, denser near the start
    // so drafts hit it.
    std::set<int32_t> tokens;
    // At most half the vocabulary: the loop below needs that many distinct tokens.
    const int64_t n_items = s % 3 == 2 ? 0 : std::min<int64_t>(c.dim / 2, 1 + rng.below(s % 3 == 0 ? 3000 : 40));
    while (static_cast<int64_t>(tokens.size()) < n_items)
      tokens.insert(static_cast<int32_t>(rng.below(2) ? rng.below(64) : rng.below(c.dim)));
    tokens.insert(static_cast<int32_t>(c.dim - 1));  // the row's last element
    const auto items_begin = static_cast<int32_t>(d.penalty_items.size() / 3);
    for (int32_t t : tokens) {
      const int64_t kind = rng.below(4);
      const int32_t count = kind == 0 ? -1 : kind == 1 ? 0 : static_cast<int32_t>(1 + rng.below(5));
      float bias = kind == 0 || rng.below(3) == 0 ? rng.uniform(-5.0f, 5.0f) : 0.0f;
      if (rng.below(20) == 0) bias = rng.below(2) ? 100.0f : -100.0f;
      int32_t bits;
      std::memcpy(&bits, &bias, 4);
      d.penalty_items.insert(d.penalty_items.end(), {t, count, bits});
    }
    const auto items_count = static_cast<int32_t>(tokens.size());
    const auto drafts_begin = static_cast<int32_t>(d.drafts.size());
    for (int32_t j = 0; j + 1 < rows; ++j) {
      const int64_t kind = rng.below(3);
      int32_t t = static_cast<int32_t>(rng.below(c.dim));
      if (kind == 0 && j > 0) t = d.drafts[static_cast<size_t>(drafts_begin + rng.below(j))];
      if (kind == 1) t = *std::next(tokens.begin(), rng.below(items_count));
      d.drafts.push_back(t);
    }
    const Mix m = kMix[s % std::size(kMix)];
    for (int32_t j = 0; j < rows; ++j, ++r) {
      PenaltyRow p{.repetition = m.rep,
                   .frequency = m.freq,
                   .presence = m.pres,
                   .items_begin = items_begin,
                   .items_count = items_count,
                   .drafts_begin = drafts_begin,
                   .drafts_count = j};
      int32_t words[PenaltyRow::kWords];
      std::memcpy(words, &p, sizeof p);
      d.sample_rows.insert(d.sample_rows.end(), words, words + PenaltyRow::kWords);
    }
  }
}

}  // namespace

std::vector<OpCase> op_cases(DType dtype) {
  if (dtype != DType::BF16 && dtype != DType::F32)
    throw Error(std::string("backend op cases: no bounds for ") + dtype_name(dtype));
  std::vector<OpCase> v;
  auto add = [&](OpCase c) {
    c.dtype = dtype;
    // F32 is the CPU backend compared with itself: identical code on identical inputs.
    c.max_nmse = dtype == DType::F32 ? 0.0 : bf16_bound(c);
    v.push_back(std::move(c));
  };
  auto S = [](int64_t x) { return std::to_string(x); };

  // ---- embedding: ids up to the largest vocab; scaled (Gemma-style sqrt(hidden)) and not.
  struct Emb {
    int64_t n, vocab, dim;
    float scale;
  };
  for (Emb e : {Emb{1, 151936, 1024, 1.0f}, Emb{16, 32000, 4096, 1.0f}, Emb{200, 32000, 2048, std::sqrt(2048.0f)},
                Emb{2048, 8192, 4096, 0.7f}}) {
    OpCase c{.op = Op::Embedding, .n = e.n, .dim = e.dim, .table = e.vocab, .scalar = e.scale};
    c.name = "embedding_n" + S(e.n) + "_v" + S(e.vocab) + "_d" + S(e.dim) + (e.scale != 1.0f ? "_scaled" : "");
    add(c);
    // The models embed into the f32 residual stream.
    c.f32 = true;
    c.name += "_f32out";
    add(c);
  }

  // ---- matmul: Qwen3-8B's fused qkv, gate_up and down, a small drafter-sized
  // projection; decode, verify, prefill-chunk and long-prefill row counts.
  struct Mm {
    int64_t in, out;
  };
  // Weights as the models hold them (tiled: prepared for the backend's
  // matmul), and a few as plain row-major views.
  auto matmul = [&](int64_t n, Mm s, bool bias, bool strided, bool f32, bool tiled = true) {
    OpCase c{.op = Op::Matmul, .n = n, .dim = s.in, .out = s.out, .bias = bias, .strided = strided, .f32 = f32,
             .tiled = tiled};
    c.name = "matmul_n" + S(n) + "_" + S(s.in) + "x" + S(s.out) + (bias ? "_bias" : "") + (strided ? "_strided" : "") +
             (f32 ? "_f32out" : "") + (tiled ? "" : "_rowmajor");
    add(c);
  };
  for (int64_t n : {1, 16, 200, 2048})
    for (Mm s : {Mm{4096, 6144}, Mm{4096, 24576}, Mm{12288, 4096}, Mm{384, 1152}}) matmul(n, s, false, false, false);
  for (int64_t n : {1, 16, 200}) matmul(n, {4096, 6144}, false, false, false, /*tiled=*/false);
  matmul(1, {4096, 6144}, true, false, false);
  matmul(200, {4096, 6144}, true, false, false);
  matmul(16, {384, 1152}, true, false, false);
  matmul(16, {4096, 6144}, false, true, false);
  matmul(200, {12288, 4096}, true, true, false);
  // Logits: f32 out, decode and verify only (the lm head never sees a prefill chunk).
  matmul(1, {4096, 151936}, false, false, true);
  matmul(16, {4096, 151936}, false, false, true);
  // The GEMM's edges (src/ops/cuda/matmul.cpp): rows just past a tile (17,
  // 33), odd weight rows, in not a multiple of the 64-wide k tile, a split
  // over K with strided rows, f32 logits with a bias, the shipped models' down;
  // each with the weight tiled (padded rows and k's) and row-major.
  for (bool tiled : {true, false}) {
    matmul(5, {392, 1001}, true, true, false, tiled);
    matmul(17, {4104, 517}, false, false, false, tiled);
    matmul(33, {1032, 4096}, true, false, false, tiled);
    matmul(100, {4096, 4096}, false, true, false, tiled);
    matmul(7, {384, 8192}, true, false, true, tiled);
    matmul(3, {1024, 384}, false, false, false, tiled);
  }
  // A quantized drafter's weights (rounded to fp8 on both sides): the CUDA
  // streamer reads their fp8 codes up to 16 rows, the bf16 tiles past that;
  // the drafter's lm head over a 15-row block's drafts; padded rows and k's.
  auto matmul_fp8 = [&](int64_t n, Mm s, bool bias, bool f32) {
    OpCase c{.op = Op::Matmul, .n = n, .dim = s.in, .out = s.out, .bias = bias, .f32 = f32, .tiled = true, .fp8 = true};
    c.name = "matmul_fp8_n" + S(n) + "_" + S(s.in) + "x" + S(s.out) + (bias ? "_bias" : "") + (f32 ? "_f32out" : "");
    add(c);
  };
  for (int64_t n : {1, 16, 17, 200})
    for (Mm s : {Mm{4096, 6144}, Mm{12288, 4096}, Mm{20480, 4096}}) matmul_fp8(n, s, false, false);
  matmul_fp8(15, {4096, 151936}, false, true);
  matmul_fp8(5, {392, 1001}, true, false);
  matmul_fp8(16, {384, 1152}, false, false);

  // ---- rmsnorm / add_rmsnorm
  auto rmsnorm = [&](int64_t n, int64_t dim, bool strided, bool in_place, bool f32 = false) {
    OpCase c{.op = Op::RmsNorm, .n = n, .dim = dim, .strided = strided, .f32 = f32, .in_place = in_place};
    c.name = "rmsnorm_n" + S(n) + "_d" + S(dim) + (strided ? "_strided" : "") + (in_place ? "_inplace" : "") +
             (f32 ? "_f32in" : "");
    add(c);
  };
  // A layer's first norm reads the f32 residual stream.
  for (int64_t n : {1, 200}) rmsnorm(n, 4096, false, false, true);
  rmsnorm(16, 1024, true, false, true);
  for (int64_t n : {1, 16, 200, 2048}) rmsnorm(n, 4096, false, false);
  rmsnorm(200, 1024, false, false);
  rmsnorm(16, 4096, true, false);
  rmsnorm(200, 4096, false, true);
  rmsnorm(16, 2048, true, true);
  for (auto [n, dim] : {std::pair<int64_t, int64_t>{1, 4096}, {16, 4096}, {200, 4096}, {2048, 4096}, {200, 1024}}) {
    OpCase c{.op = Op::AddRmsNorm, .n = n, .dim = dim};
    c.name = "add_rmsnorm_n" + S(n) + "_d" + S(dim);
    add(c);
  }
  // strided: the updated residual also into a column slice of a wider buffer
  // (a drafter's tap; 5 x 4096 for Qwen3-8B's, 3 x 384 for the shipped pair's).
  for (auto [n, dim] : {std::pair<int64_t, int64_t>{1, 4096}, {200, 4096}, {16, 384}}) {
    OpCase c{.op = Op::AddRmsNorm, .n = n, .dim = dim, .strided = true};
    c.name = "add_rmsnorm_n" + S(n) + "_d" + S(dim) + "_tap_into_slice";
    add(c);
  }

  // ---- copy f32 -> bf16: the residual stream into a column slice of the taps buffer.
  for (auto [n, dim] : {std::pair<int64_t, int64_t>{1, 4096}, {200, 4096}, {16, 384}}) {
    OpCase c{.op = Op::Copy, .n = n, .dim = dim, .strided = true};
    c.name = "copy_f32_n" + S(n) + "_d" + S(dim) + "_into_slice";
    add(c);
  }

  // ---- rope_store_kv: q/k norm and RoPE of a fused qkv buffer, K/V into the
  // pool: decode, verify and prefill rows; positions up to 32766 (large
  // angles); Llama (no norm), head_dim 64, GQA 1, yarn's attention factor;
  // and the drafter's context rows (no q heads).
  struct Rsk {
    int64_t heads, kv, hd;
    bool norm;
    float factor;
    std::vector<SeqRows> seqs;
  };
  for (const Rsk& r : {Rsk{32, 8, 128, true, 1.0f, {{32766, 1}, {0, 1}, {5000, 1}, {31, 1}}},
                       Rsk{32, 8, 128, true, 1.0f, {{300, 16}, {0, 16}, {32751, 16}}},
                       Rsk{32, 8, 128, true, 1.0f, {{0, 200}, {1800, 200}}},
                       Rsk{32, 8, 128, false, 1.0f, {{0, 200}, {77, 16}}},
                       Rsk{32, 8, 64, true, 1.0f, {{40, 1}, {0, 200}, {77, 16}}},
                       Rsk{16, 16, 64, false, 1.0f, {{0, 200}, {1000, 200}}},
                       Rsk{32, 8, 128, true, 1.1386f, {{100, 16}, {20000, 1}}},
                       Rsk{0, 8, 128, true, 1.0f, {{0, 200}, {500, 16}}},
                       Rsk{0, 8, 64, false, 1.0f, {{7, 16}}}}) {
    OpCase c{.op = Op::RopeStoreKv,
             .norm = r.norm,
             .scalar = r.factor,
             .heads = r.heads,
             .kv_heads = r.kv,
             .head_dim = r.hd,
             .seqs = r.seqs};
    c.name = "rope_store_kv_h" + S(r.heads) + "kv" + S(r.kv) + "_hd" + S(r.hd) + (r.norm ? "" : "_nonorm") +
             (r.factor != 1.0f ? "_yarn" : "") + "_" + seqs_label(r.seqs);
    add(c);
  }

  // ---- matmul_rope_store_kv: the projection and rope_store_kv in one call.
  // CUDA does both in the GEMM's split fold for whole 128-wide heads where
  // the call runs split 16- or 64-row blocks (decode, verify; GQA 4 and 1, a
  // bias, no norm, yarn; 48 rows of Qwen3-8B's qkv on the 64-row tile) and
  // falls back to the two ops elsewhere or for head_dim 64.
  struct Mrsk {
    int64_t hidden, heads, kv, hd;
    bool norm, bias;
    float factor;
    std::vector<SeqRows> seqs;
  };
  for (const Mrsk& r : {Mrsk{4096, 32, 8, 128, true, false, 1.0f, {{32766, 1}, {0, 1}, {5000, 1}}},
                        Mrsk{4096, 32, 8, 128, true, false, 1.0f, {{300, 16}}},
                        Mrsk{4096, 32, 8, 128, true, false, 1.0f, {{0, 40}, {70, 8}}},
                        Mrsk{1024, 8, 2, 128, false, true, 1.0f, {{77, 15}, {9, 1}}},
                        Mrsk{2048, 8, 8, 128, true, true, 1.1386f, {{20000, 7}}},
                        Mrsk{2048, 16, 4, 64, true, false, 1.0f, {{40, 1}, {0, 16}}}}) {
    OpCase c{.op = Op::MatmulRopeStoreKv,
             .dim = r.hidden,
             .bias = r.bias,
             .tiled = true,
             .norm = r.norm,
             .scalar = r.factor,
             .heads = r.heads,
             .kv_heads = r.kv,
             .head_dim = r.hd,
             .seqs = r.seqs};
    c.name = "matmul_rope_store_kv_d" + S(r.hidden) + "_h" + S(r.heads) + "kv" + S(r.kv) + "_hd" + S(r.hd) +
             (r.norm ? "" : "_nonorm") + (r.bias ? "_bias" : "") + (r.factor != 1.0f ? "_yarn" : "") + "_" +
             seqs_label(r.seqs);
    add(c);
    if (r.seqs.size() == 1 && r.seqs[0].rows == 16) {  // a drafter's block over fp8 weights
      c.fp8 = true;
      c.name += "_fp8";
      add(c);
    }
  }

  // ---- matmul_silu_glu: the gate_up projection and silu_glu in one call.
  // CUDA folds decode and verify rows (Qwen3-8B's 12288; 40 rows on the
  // 64-row tile) straight into out; 200 rows (the 128-row tile, the second
  // row tile partial) and an unsplit small projection go through gate_up in
  // runs of 64; an intermediate size that is no multiple of 64 through the
  // two ops.
  struct Glu {
    int64_t n, in, inter;
  };
  for (Glu g : {Glu{1, 4096, 12288}, Glu{16, 4096, 12288}, Glu{40, 4096, 12288}, Glu{200, 4096, 12288},
                Glu{7, 2048, 3072}, Glu{16, 384, 1152}, Glu{5, 1024, 96}}) {
    OpCase c{.op = Op::MatmulSiluGlu, .n = g.n, .dim = g.in, .out = g.inter};
    c.name = "matmul_silu_glu_n" + S(g.n) + "_" + S(g.in) + "x" + S(g.inter);
    add(c);
    if (g.n == 16 || g.n == 40) {  // fp8 weights: the fold over their codes, and the bf16 path past 16 rows
      c.fp8 = true;
      c.name += "_fp8";
      add(c);
    }
  }

  // ---- silu_glu: Qwen3-8B's and -0.6B's intermediate sizes.
  for (auto [n, inter] :
       {std::pair<int64_t, int64_t>{1, 12288}, {16, 12288}, {200, 12288}, {2048, 12288}, {1, 3072}, {200, 3072}}) {
    OpCase c{.op = Op::SiluGlu, .n = n, .dim = inter};
    c.name = "silu_glu_n" + S(n) + "_i" + S(inter);
    add(c);
  }

  // ---- gather_rows: hidden rows picked for the lm head; f32 logits rows.
  struct Gather {
    int64_t n, src_rows, dim;
    bool f32;
  };
  for (Gather g : {Gather{1, 16, 1024, false}, Gather{16, 200, 4096, false}, Gather{200, 2048, 4096, false},
                   Gather{8, 64, 151936, true}}) {
    OpCase c{.op = Op::GatherRows, .n = g.n, .dim = g.dim, .table = g.src_rows, .f32 = g.f32};
    c.name = "gather_rows_n" + S(g.n) + "_from" + S(g.src_rows) + "_d" + S(g.dim) + (g.f32 ? "_f32" : "");
    add(c);
  }

  // ---- scatter_rows: a step's taps (3 x 384 bf16 for the shipped pair, 5 x 4096
  // for Qwen3-8B's drafter) set aside into the waiting-row store; a recorded
  // step's pad rows are dropped (index -1).
  for (Gather g : {Gather{16, 4096, 1152, false}, Gather{200, 1024, 20480, false}, Gather{1024, 58000, 1152, false},
                   Gather{8, 64, 1024, true}}) {
    OpCase c{.op = Op::ScatterRows, .n = g.n, .dim = g.dim, .table = g.src_rows, .f32 = g.f32};
    c.name = "scatter_rows_n" + S(g.n) + "_into" + S(g.src_rows) + "_d" + S(g.dim) + (g.f32 ? "_f32" : "");
    add(c);
  }

  // ---- softcap and argmax on f32 logits.
  for (auto [n, vocab] : {std::pair<int64_t, int64_t>{1, 151936}, {16, 151936}, {200, 8192}}) {
    OpCase c{.op = Op::Softcap, .n = n, .dim = vocab, .scalar = 30.0f};
    c.name = "softcap_n" + S(n) + "_v" + S(vocab);
    add(c);
  }
  for (auto [n, vocab, ties] : {std::tuple<int64_t, int64_t, bool>{1, 151936, false},
                                {16, 151936, false},
                                {200, 8192, false},
                                {1, 151936, true},
                                {16, 8192, true}}) {
    OpCase c{.op = Op::Argmax, .n = n, .dim = vocab, .ties = ties};
    c.name = "argmax_n" + S(n) + "_v" + S(vocab) + (ties ? "_ties" : "");
    add(c);
  }
  // argmax_key: one rank's shard of a tensor-parallel vocabulary (the keys
  // hold the value's order word too, so equal keys mean equal values).
  for (auto [n, shard, offset, ties] : {std::tuple<int64_t, int64_t, int64_t, bool>{1, 75968, 75968, false},
                                        {16, 37984, 113952, true},
                                        {200, 4096, 0, false}}) {
    OpCase c{.op = Op::Argmax, .n = n, .dim = shard, .ties = ties, .offset = offset};
    c.name = "argmax_key_n" + S(n) + "_v" + S(shard) + "_at" + S(offset) + (ties ? "_ties" : "");
    add(c);
  }

  // ---- sample and accept: a verify step's rows and plain decode rows, each
  // row with its own filters (sample_row_params) and random key.
  for (auto [n, vocab, greedy] : {std::tuple<int64_t, int64_t, bool>{16, 151936, true},
                                  {64, 151936, false},
                                  {200, 8192, false},
                                  {3, 1000, false}}) {
    OpCase c{.op = Op::Sample, .n = n, .dim = vocab, .greedy = greedy};
    c.name = "sample_n" + S(n) + "_v" + S(vocab) + (greedy ? "_greedy" : "");
    add(c);
  }
  for (auto [vocab, greedy, seqs] : {std::tuple<int64_t, bool, std::vector<SeqRows>>{151936, true, {{0, 16}, {0, 16}, {0, 1}, {0, 16}}},
                                     {151936, false, {{0, 16}, {0, 1}, {0, 16}, {0, 16}, {0, 9}, {0, 1}}},
                                     {8192, false, std::vector<SeqRows>(24, {0, 16})}}) {
    OpCase c{.op = Op::Accept, .dim = vocab, .greedy = greedy, .seqs = seqs};
    c.name = "accept_v" + S(vocab) + "_" + seqs_label(seqs) + (greedy ? "_greedy" : "");
    add(c);
  }

  // ---- penalize: a verify step's sequences and single decode rows.
  for (auto [vocab, seqs] : {std::tuple<int64_t, std::vector<SeqRows>>{151936, {{0, 16}, {0, 1}, {0, 16}, {0, 9}, {0, 1}, {0, 16}, {0, 16}}},
                             {8192, std::vector<SeqRows>(24, {0, 16})},
                             {1000, {{0, 1}, {0, 1}, {0, 1}}}}) {
    OpCase c{.op = Op::Penalize, .dim = vocab, .seqs = seqs};
    c.name = "penalize_v" + S(vocab) + "_" + seqs_label(seqs);
    add(c);
  }

  // ---- carry_forward: the fixes of an overlapped step of n sequences of
  // `rows` rows (a decode step: 1; a verify: 16), each in four inputs.
  for (auto [seqs, rows] : {std::pair<int64_t, int64_t>{1, 1}, {8, 16}, {32, 16}, {64, 1}}) {
    OpCase c{.op = Op::CarryForward, .n = seqs, .dim = rows};
    c.name = "carry_forward_s" + S(seqs) + "_r" + S(rows);
    add(c);
  }

  // ---- paged_attention: several sequences of different lengths per batch,
  // shuffled block tables, block size 16. Contexts of 0 and of a few keys make
  // an off-by-one in the mask visible; 32k contexts cover long split-KV paths.
  struct Attn {
    int64_t hd, heads, kv;
    MaskKind mask;
    int64_t window;
    std::vector<SeqRows> seqs;
    bool strided;
    int32_t keys_bucket = 0;
    int32_t block_size = 16;
  };
  const auto C = MaskKind::Causal, B = MaskKind::Bidirectional, W = MaskKind::Window,
             N = MaskKind::BidirectionalWindow;
  const std::vector<Attn> attn = {
      // decode
      {128, 32, 8, C, 0, {{32767, 1}, {9000, 1}, {1500, 1}, {77, 1}, {0, 1}}, true},
      {64, 16, 16, C, 0, {{5000, 1}, {300, 1}, {17, 1}, {1, 1}}, false},
      {128, 64, 8, C, 0, {{32000, 1}, {100, 1}, {4096, 1}}, false},
      // verify
      {128, 32, 8, C, 0, {{32752, 16}, {2000, 16}, {31, 16}, {0, 16}}, true},
      {64, 32, 8, C, 0, {{700, 16}, {16, 16}, {5, 16}}, false},
      {128, 16, 16, C, 0, {{3000, 16}, {64, 16}}, false},
      // prefill chunks
      {128, 32, 8, C, 0, {{0, 200}, {1800, 200}, {4000, 200}}, false},
      {64, 16, 16, C, 0, {{0, 200}, {513, 200}}, false},
      {128, 64, 8, C, 0, {{0, 200}, {3000, 200}}, true},
      // a continuous-batching step: decode rows, a prefill chunk and a verify block together
      {128, 32, 8, C, 0, {{5000, 1}, {0, 200}, {300, 16}, {12000, 1}}, false},
      // DFlash full_attention: the block sees all its context and itself
      {128, 32, 8, B, 0, {{32000, 16}, {1000, 16}, {0, 16}, {37, 16}}, true},
      {64, 16, 16, B, 0, {{250, 16}, {3, 16}}, false},
      {128, 64, 8, B, 0, {{4000, 16}, {15, 16}}, false},
      {64, 32, 8, B, 0, {{0, 200}, {700, 200}}, false},
      // DFlash sliding_attention: windows smaller and larger than the context
      {128, 32, 8, W, 64, {{8000, 16}, {30, 16}, {500, 16}}, false},
      {64, 32, 8, W, 128, {{0, 200}, {1000, 200}}, false},
      {128, 64, 8, W, 4096, {{1000, 16}, {2000, 16}}, false},
      {128, 32, 8, W, 2048, {{32000, 1}, {100, 1}, {2047, 1}, {2048, 1}}, true},
      {64, 16, 16, W, 5, {{40, 16}, {2, 16}}, false},
      {128, 32, 8, W, 1, {{50, 16}, {0, 1}}, false},
      // DFlash non-causal sliding layers (use_swa with causal false): keys in
      // (p - W, p + W); windows shorter than the block cut later block rows off too.
      {128, 32, 8, N, 8, {{8000, 16}, {30, 16}, {0, 16}}, false},
      {64, 16, 16, N, 5, {{40, 16}, {2, 16}}, false},
      {128, 64, 8, N, 2048, {{32000, 16}, {100, 16}, {2047, 16}}, true},
      {64, 32, 8, N, 100, {{0, 200}, {1000, 200}}, false},
      {128, 32, 8, N, 1, {{50, 16}, {0, 1}}, false},
      // Recorded steps: the launch sized for the context bucket (max_keys
      // 16384), the sequences far shorter, so each CTA refits its key groups.
      {128, 32, 8, C, 0, {{8200, 1}}, false, 16384},
      {128, 32, 8, C, 0, {{8200, 16}}, false, 16384},
      {128, 32, 8, B, 0, {{9000, 16}}, false, 16384},
      {128, 32, 8, C, 0, {{5000, 16}, {700, 16}}, false, 16384},
      {128, 32, 8, W, 2048, {{8200, 16}}, false, 16384},
      // Pool blocks other than 16 slots, under prefill chunks (the 8 x 1
      // layout) and beside them: a 64-key tile spans two blocks, one, part
      // of one, or eight.
      {128, 32, 8, C, 0, {{0, 200}, {1800, 200}}, false, 0, 32},
      {64, 32, 8, W, 128, {{0, 200}, {1000, 200}}, false, 0, 64},
      {128, 32, 8, C, 0, {{700, 200}, {3000, 17}}, false, 0, 128},
      {128, 32, 8, C, 0, {{0, 200}, {1000, 200}}, false, 0, 8},
  };
  for (const Attn& a : attn) {
    OpCase c{.op = Op::PagedAttention,
             .strided = a.strided,
             .heads = a.heads,
             .kv_heads = a.kv,
             .head_dim = a.hd,
             .mask = a.mask,
             .window = a.window,
             .seqs = a.seqs,
             .keys_bucket = a.keys_bucket,
             .block_size = a.block_size};
    const std::string mask = a.mask == C   ? "causal"
                             : a.mask == B ? "bidir"
                                           : (a.mask == N ? "bidirwin" : "win") + S(a.window);
    c.name = "paged_attention_" + mask + "_hd" + S(a.hd) + "_gqa" + S(a.heads / a.kv) + "_h" + S(a.heads) + "_" +
             seqs_label(a.seqs) + (a.strided ? "_strided" : "") +
             (a.keys_bucket > 0 ? "_bucket" + S(a.keys_bucket) : "") +
             (a.block_size != 16 ? "_bs" + S(a.block_size) : "");
    add(c);
  }

  std::set<std::string> names;
  for (const OpCase& c : v)
    if (!names.insert(c.name).second) throw Error("backend op cases: duplicate name " + c.name);
  return v;
}

std::shared_ptr<const CaseData> make_case_data(const OpCase& c, uint64_t seed) {
  auto d = std::make_shared<CaseData>();
  Rng rng(seed);
  const size_t n = static_cast<size_t>(c.n);
  const int64_t xw = c.strided ? kPadLeft + c.dim + kPadRight : c.dim;
  const int64_t hd = c.head_dim, qkv_w = (c.heads + 2 * c.kv_heads) * hd;
  // Inputs the backend under test holds in c.dtype; the f32 ones (logits, inv_freq) stay as drawn.
  std::vector<std::vector<float>*> rounded;

  switch (c.op) {
    case Op::Embedding:
      d->w = rng.uniform(static_cast<size_t>(c.table * c.dim), -1.0f, 1.0f);
      d->ids.resize(n);
      for (auto& id : d->ids) id = static_cast<int32_t>(rng.below(c.table));
      d->ids.back() = static_cast<int32_t>(c.table - 1);  // the last row: 64-bit offsets matter there
      rounded = {&d->w};
      break;
    case Op::Matmul:
      d->x = rng.uniform(n * xw, -1.0f, 1.0f);
      d->w = rng.uniform(static_cast<size_t>(c.out * c.dim), -0.05f, 0.05f);
      if (c.bias) d->bias = rng.uniform(static_cast<size_t>(c.out), -1.0f, 1.0f);
      rounded = {&d->x, &d->w, &d->bias};
      break;
    case Op::RmsNorm:
      d->x = rng.uniform(n * xw, -3.0f, 3.0f);
      d->w = rng.uniform(static_cast<size_t>(c.dim), -2.0f, 2.0f);
      rounded = {&d->w};
      if (!c.f32) rounded.push_back(&d->x);
      break;
    case Op::AddRmsNorm:  // the residual stays f32 on every backend
      d->residual = rng.uniform(n * c.dim, -4.0f, 4.0f);
      d->delta = rng.uniform(n * c.dim, -1.0f, 1.0f);
      d->w = rng.uniform(static_cast<size_t>(c.dim), -2.0f, 2.0f);
      rounded = {&d->delta, &d->w};
      break;
    case Op::Copy:  // f32 values that bf16 cannot hold exactly: the rounding shows
      d->x = rng.uniform(n * c.dim, -4.0f, 4.0f);
      d->w = rng.uniform(n * xw, -1.0f, 1.0f);  // what the destination buffer held before
      rounded = {&d->w};
      break;
    case Op::RopeStoreKv: {
      d->attn = make_attn_batch(c.seqs, c.block_size, rng.next());
      d->x = rng.uniform(static_cast<size_t>(d->attn.n_rows * qkv_w), -2.0f, 2.0f);
      d->norm_q = rng.uniform(static_cast<size_t>(hd), -2.0f, 2.0f);
      d->norm_k = rng.uniform(static_cast<size_t>(hd), -2.0f, 2.0f);
      d->inv_freq.resize(static_cast<size_t>(hd / 2));
      cpu::rope_inv_freq(kRopeTheta, hd, d->inv_freq.data());
      rounded = {&d->x, &d->norm_q, &d->norm_k};
      break;
    }
    case Op::MatmulRopeStoreKv: {
      d->attn = make_attn_batch(c.seqs, c.block_size, rng.next());
      d->x = rng.uniform(static_cast<size_t>(d->attn.n_rows * c.dim), -1.0f, 1.0f);
      d->w = rng.uniform(static_cast<size_t>(qkv_w * c.dim), -0.05f, 0.05f);
      if (c.bias) d->bias = rng.uniform(static_cast<size_t>(qkv_w), -1.0f, 1.0f);
      d->norm_q = rng.uniform(static_cast<size_t>(hd), -2.0f, 2.0f);
      d->norm_k = rng.uniform(static_cast<size_t>(hd), -2.0f, 2.0f);
      d->inv_freq.resize(static_cast<size_t>(hd / 2));
      cpu::rope_inv_freq(kRopeTheta, hd, d->inv_freq.data());
      rounded = {&d->x, &d->w, &d->bias, &d->norm_q, &d->norm_k};
      break;
    }
    case Op::MatmulSiluGlu:
      d->x = rng.uniform(n * c.dim, -1.0f, 1.0f);
      d->w = rng.uniform(static_cast<size_t>(2 * c.out * c.dim), -0.1f, 0.1f);
      rounded = {&d->x, &d->w};
      break;
    case Op::SiluGlu:
      d->x = rng.uniform(n * 2 * c.dim, -6.0f, 6.0f);
      rounded = {&d->x};
      break;
    case Op::GatherRows:
      d->x = rng.uniform(static_cast<size_t>(c.table * c.dim), -1.0f, 1.0f);
      d->ids.resize(n);  // unsorted, with repeats when n is large
      for (auto& id : d->ids) id = static_cast<int32_t>(rng.below(c.table));
      d->ids[0] = static_cast<int32_t>(c.table - 1);
      if (!c.f32) rounded = {&d->x};
      break;
    case Op::ScatterRows: {
      d->x = rng.uniform(n * c.dim, -1.0f, 1.0f);
      // Distinct destinations in random order, every fourth row dropped, the
      // destination's last row used (its bounds).
      std::vector<int32_t> all(static_cast<size_t>(c.table));
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
      for (size_t i = all.size() - 1; i > 0; --i) std::swap(all[i], all[static_cast<size_t>(rng.below(static_cast<int64_t>(i) + 1))]);
      std::swap(all[0], *std::find(all.begin(), all.end(), static_cast<int32_t>(c.table - 1)));
      d->ids.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
      for (size_t i = 3; i < n; i += 4) d->ids[i] = -1;
      if (!c.f32) rounded = {&d->x};
      break;
    }
    case Op::Softcap:
      // Past +-cap too, where tanh saturates.
      d->x = rng.uniform(n * c.dim, -3.0f * c.scalar, 3.0f * c.scalar);
      break;
    case Op::Argmax: {
      d->x = rng.uniform(n * c.dim, -4.0f, 4.0f);
      for (size_t r = 0; r < n; ++r) {
        float* row = d->x.data() + r * c.dim;
        const float top = *std::max_element(row, row + c.dim) + 1.0f;  // a clear winner
        // Row 0 wins at its last element, row 1 at its first: the ends of every reduction.
        const int64_t at = r == 0 ? c.dim - 1 : r == 1 ? 0 : rng.below(c.dim);
        row[at] = top;
        if (c.ties) row[at == 0 ? 1 + rng.below(c.dim - 1) : rng.below(at)] = top;  // first one wins
      }
      break;
    }
    case Op::Sample:
    case Op::Accept:
      make_sample_data(c, rng, *d);
      break;
    case Op::Penalize:
      make_penalty_data(c, rng, *d);
      break;
    case Op::CarryForward: {
      // Per sequence, as the runner lays a step out: first position, the
      // rows' positions and slots (block table of 12 blocks, shuffled ids),
      // the anchor id, and the sampling rows' position word (stride 8).
      constexpr int32_t kBlock = 16, kTable = 12, kWordsPerSeq = 8 + 3 * 16 + 8 * 16 + kTable;
      const auto seqs = static_cast<int32_t>(c.n), rows = static_cast<int32_t>(c.dim);
      d->ids.resize(static_cast<size_t>(seqs * kWordsPerSeq));
      for (auto& w : d->ids) w = static_cast<int32_t>(rng.below(1 << 20));
      d->drafts.resize(static_cast<size_t>(2 * seqs));
      for (int32_t s = 0; s < seqs; ++s) {
        d->drafts[2 * s] = static_cast<int32_t>(rng.below(16));       // accepted
        d->drafts[2 * s + 1] = static_cast<int32_t>(rng.below(151936));  // token
      }
      // A step following one that followed another carries a lag (how far
      // that one's positions were off, <= 0); the others none.
      if (seqs % 2 == 0) {
        d->lag.resize(static_cast<size_t>(seqs));
        for (auto& l : d->lag) l = -static_cast<int32_t>(rng.below(16));
      }
      for (int32_t s = 0; s < seqs; ++s) {
        const int32_t base = s * kWordsPerSeq, table = base + 8 + 3 * 16 + 8 * 16;
        for (int32_t b = 0; b < kTable; ++b)
          d->ids[static_cast<size_t>(table + b)] = static_cast<int32_t>(rng.below(5000));
        const int32_t v = seqs - 1 - s;  // verdict rows in another order than the sequences
        const int32_t shift = 1 - rows, pos0 = static_cast<int32_t>(rng.below(kTable * kBlock - 3 * 16 - 1)) + 32;
        auto fix = [&](int32_t dst, int32_t kind, int32_t count, int32_t stride) {
          d->fixes.insert(d->fixes.end(), {dst, table, v, kind, shift, pos0, count, stride, kBlock});
        };
        fix(base, InputFix::kShift, 1, 1);
        fix(base + 1, InputFix::kToken, 1, 1);
        fix(base + 2, InputFix::kLag, 1, 1);
        fix(base + 8, InputFix::kShift, rows, 1);
        fix(base + 8 + 16, InputFix::kSlot, rows, 1);
        fix(base + 8 + 48 + 6, InputFix::kShift, rows, 8);
      }
      break;
    }
    case Op::PagedAttention: {
      d->attn = make_attn_batch(c.seqs, c.block_size, rng.next());
      d->attn.max_keys = std::max(d->attn.max_keys, c.keys_bucket);
      const int64_t q_w = c.strided ? qkv_w : c.heads * hd, kv_row = c.kv_heads * hd;
      d->x = rng.uniform(static_cast<size_t>(d->attn.n_rows * q_w), -2.0f, 2.0f);
      // NaN in every slot no sequence owns: spare blocks, the tails of last blocks.
      d->k_pool.assign(static_cast<size_t>(d->attn.num_slots() * kv_row), NAN);
      d->v_pool.assign(d->k_pool.size(), NAN);
      for (size_t s = 0; s < c.seqs.size(); ++s)
        for (int64_t p = 0; p < c.seqs[s].context + c.seqs[s].rows; ++p) {
          const size_t at = static_cast<size_t>(d->attn.slot(s, p) * kv_row);
          for (int64_t i = 0; i < kv_row; ++i) {
            d->k_pool[at + i] = rng.uniform(-2.0f, 2.0f);
            d->v_pool[at + i] = rng.uniform(-1.0f, 1.0f);
          }
        }
      rounded = {&d->x, &d->k_pool, &d->v_pool};
      break;
    }
  }
  if (c.dtype == DType::BF16)
    for (auto* a : rounded)
      for (float& x : *a) x = round_bf16(x);
  return d;
}

namespace {

class Bound final : public BoundCase {
 public:
  Bound(const OpCase& c, const CaseData& d, Backend& be) : be_(be) { setup(c, d); }

  void run() override { op_(); }

  std::vector<Output> outputs() override {
    std::vector<Output> outs;
    for (const Out& o : outs_) {
      Output r{.name = o.name,
               .rows = o.t.rows,
               .cols = o.t.cols,
               .is_i32 = o.t.dtype == DType::I32,
               .nan_sentinels = o.nan_sentinels};
      if (r.is_i32) {
        r.i32.resize(static_cast<size_t>(o.t.numel()));
        be_.download_i32(o.t, r.i32.data());
      } else {
        r.f32.resize(static_cast<size_t>(o.t.numel()));
        be_.download(o.t, r.f32.data());
      }
      outs.push_back(std::move(r));
    }
    return outs;
  }

 private:
  struct Out {
    std::string name;
    Tensor t;
    bool nan_sentinels;
  };

  Tensor put(DType dtype, int64_t rows, int64_t cols, const std::vector<float>& host) {
    keep_.push_back(be_.alloc_tensor(dtype, rows, cols));
    if (static_cast<int64_t>(host.size()) != rows * cols) throw Error("backend op case: host input of wrong size");
    be_.upload(keep_.back().t, host.data(), DType::F32);
    return keep_.back().t;
  }
  const int32_t* put_i32(const std::vector<int32_t>& host) {
    keep_.push_back(upload_i32(be_, host));
    return keep_.back().t.as<const int32_t>();
  }
  // An output nothing has written yet: NaN, so an element the op skips fails.
  Tensor poisoned(DType dtype, int64_t rows, int64_t cols) {
    keep_.push_back(be_.alloc_tensor(dtype, rows, cols));
    be_.fill_nan(keep_.back().t);
    return keep_.back().t;
  }
  void output(std::string name, const Tensor& t, bool nan_sentinels = false) {
    outs_.push_back(Out{std::move(name), t, nan_sentinels});
  }

  void setup(const OpCase& c, const CaseData& d);

  Backend& be_;
  std::vector<OwnedTensor> keep_;
  BackendAttnBatch attn_;
  std::function<void()> op_;
  std::vector<Out> outs_;
};

void Bound::setup(const OpCase& c, const CaseData& d) {
  const DType act = be_.activation_dtype(), wt = be_.weight_dtype();
  const int64_t n = c.n, hd = c.head_dim;
  const int64_t qkv_w = (c.heads + 2 * c.kv_heads) * hd;
  // x's buffer, and x as the op sees it: the buffer's middle columns when strided.
  Tensor x_buffer;
  auto x_view = [&](DType dtype) {
    x_buffer = put(dtype, n, c.strided ? kPadLeft + c.dim + kPadRight : c.dim, d.x);
    return c.strided ? x_buffer.col_slice(kPadLeft, c.dim) : x_buffer;
  };

  switch (c.op) {
    case Op::Embedding: {
      const Tensor table = put(wt, c.table, c.dim, d.w), out = poisoned(c.f32 ? DType::F32 : act, n, c.dim);
      keep_.push_back(upload_i32(be_, d.ids));
      const Tensor ids = keep_.back().t;
      const float scale = c.scalar;
      op_ = [this, table, ids, out, scale] { be_.embedding(table, ids, out, scale); };
      output("out", out);
      break;
    }
    case Op::Matmul: {
      const Tensor x = x_view(act);
      put(wt, c.out, c.dim, d.w);
      if (c.tiled) be_.prepare_matmul_weight(keep_.back(), c.fp8 ? WeightQuant::Fp8 : WeightQuant::None);
      const Tensor w = keep_.back().t;
      const Tensor bias = c.bias ? put(wt, 1, c.out, d.bias) : Tensor{};
      const Tensor y = poisoned(c.f32 ? DType::F32 : act, n, c.out);
      const bool has_bias = c.bias;
      op_ = [this, x, w, bias, y, has_bias] { be_.matmul(x, w, has_bias ? &bias : nullptr, y); };
      output("y", y);
      break;
    }
    case Op::RmsNorm: {
      const Tensor x = x_view(c.f32 ? DType::F32 : act), w = put(wt, 1, c.dim, d.w);
      const Tensor y = c.in_place ? x : poisoned(act, n, c.dim);
      op_ = [this, x, w, y] { be_.rmsnorm(x, w, y, kEps); };
      // In place and strided: the whole buffer, so writes outside the view show.
      output("y", c.in_place ? x_buffer : y);
      break;
    }
    case Op::AddRmsNorm: {
      const Tensor res = put(DType::F32, n, c.dim, d.residual), delta = put(act, n, c.dim, d.delta);
      const Tensor w = put(wt, 1, c.dim, d.w), y = poisoned(act, n, c.dim);
      if (!c.strided) {
        op_ = [this, res, delta, w, y] { be_.add_rmsnorm(res, delta, w, y, kEps, nullptr); };
      } else {
        // The tap is the middle third of a buffer whose other columns must keep their NaN.
        const Tensor taps = poisoned(act, n, 3 * c.dim), tap = taps.col_slice(c.dim, c.dim);
        op_ = [this, res, delta, w, y, tap] { be_.add_rmsnorm(res, delta, w, y, kEps, &tap); };
        output("taps", taps, true);
      }
      output("residual", res);
      output("y", y);
      break;
    }
    case Op::Copy: {
      const Tensor src = put(DType::F32, n, c.dim, d.x);
      const Tensor dst_buffer = put(act, n, kPadLeft + c.dim + kPadRight, d.w);
      const Tensor dst = dst_buffer.col_slice(kPadLeft, c.dim);
      op_ = [this, src, dst] { be_.copy(src, dst); };
      output("dst", dst_buffer);  // the whole buffer: columns outside the slice must keep their values
      break;
    }
    case Op::RopeStoreKv: {
      attn_ = upload_attn_batch(be_, d.attn);
      const int64_t rows = d.attn.n_rows, kv_w = c.kv_heads * hd;
      const Tensor qkv = put(act, rows, qkv_w, d.x);
      const bool q = c.heads > 0;
      const Tensor nq = c.norm && q ? put(wt, 1, hd, d.norm_q) : Tensor{};
      const Tensor nk = c.norm ? put(wt, 1, hd, d.norm_k) : Tensor{};
      const Rope rope{put(DType::F32, 1, hd / 2, d.inv_freq), c.scalar};
      const Tensor kc = poisoned(act, d.attn.num_slots(), kv_w), vc = poisoned(act, d.attn.num_slots(), kv_w);
      const int32_t *pos = attn_.batch.positions, *slots = attn_.batch.slots;
      const int64_t heads = c.heads, kv = c.kv_heads;
      const bool norm = c.norm;
      op_ = [this, qkv, heads, kv, hd, nq, nk, norm, q, pos, rope, slots, kc, vc] {
        be_.rope_store_kv(qkv, heads, kv, hd, norm && q ? &nq : nullptr, norm ? &nk : nullptr, pos, rope, kEps, slots,
                          kc, vc);
      };
      output("qkv", qkv);  // q rotated in place; the k and v columns must come back untouched
      output("k_cache", kc, true);
      output("v_cache", vc, true);
      break;
    }
    case Op::MatmulRopeStoreKv: {
      attn_ = upload_attn_batch(be_, d.attn);
      const int64_t rows = d.attn.n_rows, kv_w = c.kv_heads * hd;
      const Tensor x = put(act, rows, c.dim, d.x);
      put(wt, qkv_w, c.dim, d.w);
      be_.prepare_matmul_weight(keep_.back(), c.fp8 ? WeightQuant::Fp8 : WeightQuant::None);
      const Tensor w = keep_.back().t;
      const Tensor bias = c.bias ? put(wt, 1, qkv_w, d.bias) : Tensor{};
      const Tensor qkv = poisoned(act, rows, qkv_w);
      const Tensor nq = c.norm ? put(wt, 1, hd, d.norm_q) : Tensor{};
      const Tensor nk = c.norm ? put(wt, 1, hd, d.norm_k) : Tensor{};
      const Rope rope{put(DType::F32, 1, hd / 2, d.inv_freq), c.scalar};
      const Tensor kc = poisoned(act, d.attn.num_slots(), kv_w), vc = poisoned(act, d.attn.num_slots(), kv_w);
      const int32_t *pos = attn_.batch.positions, *slots = attn_.batch.slots;
      const int64_t heads = c.heads, kv = c.kv_heads;
      const bool norm = c.norm, has_bias = c.bias;
      op_ = [this, x, w, bias, has_bias, qkv, heads, kv, hd, nq, nk, norm, pos, rope, slots, kc, vc] {
        be_.matmul_rope_store_kv(x, w, has_bias ? &bias : nullptr, qkv, heads, kv, hd, norm ? &nq : nullptr,
                                 norm ? &nk : nullptr, pos, rope, kEps, slots, kc, vc);
      };
      output("qkv", qkv);  // q rotated; k and v as projected
      output("k_cache", kc, true);
      output("v_cache", vc, true);
      break;
    }
    case Op::MatmulSiluGlu: {
      const Tensor x = put(act, n, c.dim, d.x);
      put(wt, 2 * c.out, c.dim, d.w);
      be_.prepare_glu_weight(keep_.back(), c.fp8 ? WeightQuant::Fp8 : WeightQuant::None);
      const Tensor w = keep_.back().t;
      const Tensor gate_up = poisoned(act, n, 2 * c.out), out = poisoned(act, n, c.out);
      op_ = [this, x, w, gate_up, out] { be_.matmul_silu_glu(x, w, gate_up, out); };
      output("out", out);  // gate_up is scratch: what it holds afterwards is the backend's business
      break;
    }
    case Op::SiluGlu: {
      const Tensor gu = put(act, n, 2 * c.dim, d.x), out = poisoned(act, n, c.dim);
      op_ = [this, gu, out] { be_.silu_glu(gu, out); };
      output("out", out);
      break;
    }
    case Op::GatherRows: {
      const DType dt = c.f32 ? DType::F32 : act;
      const Tensor src = put(dt, c.table, c.dim, d.x), dst = poisoned(dt, n, c.dim);
      const int32_t* rows = put_i32(d.ids);
      op_ = [this, src, rows, dst] { be_.gather_rows(src, rows, dst); };
      output("dst", dst);
      break;
    }
    case Op::ScatterRows: {
      // Rows nobody writes keep their NaN: the op must touch only its rows.
      const DType dt = c.f32 ? DType::F32 : act;
      const Tensor src = put(dt, n, c.dim, d.x), dst = poisoned(dt, c.table, c.dim);
      const int32_t* rows = put_i32(d.ids);
      op_ = [this, src, rows, dst] { be_.scatter_rows(src, rows, dst); };
      output("dst", dst, true);
      break;
    }
    case Op::Softcap: {
      const Tensor x = put(DType::F32, n, c.dim, d.x);
      const float cap = c.scalar;
      op_ = [this, x, cap] { be_.softcap(x, cap); };
      output("x", x);
      break;
    }
    case Op::Argmax: {
      const Tensor x = put(DType::F32, n, c.dim, d.x);
      // fill_nan knows no i32: an index no row can have instead.
      const int64_t words = c.offset >= 0 ? 2 : 1;
      keep_.push_back(upload_i32(be_, std::vector<int32_t>(static_cast<size_t>(n * words), -7)));
      const Tensor out = keep_.back().t.reshape(n, words);
      const int64_t offset = c.offset;
      if (offset >= 0)
        op_ = [this, x, offset, out] { be_.argmax_key(x, offset, out); };
      else
        op_ = [this, x, out] { be_.argmax(x, out); };
      output(offset >= 0 ? "key" : "index", out);
      break;
    }
    case Op::Sample:
    case Op::Accept: {
      const auto rows_n = static_cast<int64_t>(d.seq_start.back());
      const Tensor x = put(DType::F32, rows_n, c.dim, d.x);
      keep_.push_back(upload_i32(be_, d.sample_rows));
      const Tensor rows = keep_.back().t.reshape(rows_n, SampleRow::kWords);
      keep_.push_back(upload_i32(be_, std::vector<int32_t>(static_cast<size_t>(rows_n), -7)));
      const Tensor tokens = keep_.back().t;
      if (c.op == Op::Sample) {
        op_ = [this, x, rows, tokens] { be_.sample(x, rows, tokens); };
      } else {
        keep_.push_back(upload_i32(be_, d.seq_start));
        const Tensor starts = keep_.back().t;
        keep_.push_back(upload_i32(be_, std::vector<int32_t>(2 * (d.seq_start.size() - 1), -7)));
        const Tensor out = keep_.back().t.reshape(starts.rows - 1, 2);
        op_ = [this, x, rows, starts, tokens, out] { be_.accept(x, rows, starts, tokens, out); };
        output("accepted_bonus", out);
      }
      output("tokens", tokens);
      break;
    }
    case Op::Penalize: {
      const auto rows_n = static_cast<int64_t>(d.sample_rows.size()) / PenaltyRow::kWords;
      const Tensor x = put(DType::F32, rows_n, c.dim, d.x);
      keep_.push_back(upload_i32(be_, d.sample_rows));
      const Tensor rows = keep_.back().t.reshape(rows_n, PenaltyRow::kWords);
      keep_.push_back(upload_i32(be_, d.penalty_items));
      const Tensor items = keep_.back().t.reshape(static_cast<int64_t>(d.penalty_items.size()) / 3, 3);
      keep_.push_back(upload_i32(be_, d.drafts));
      const Tensor drafts = keep_.back().t;
      op_ = [this, x, rows, items, drafts] { be_.penalize(x, rows, items, drafts); };
      output("logits", x);  // the whole rows: untouched tokens must keep their values
      break;
    }
    case Op::CarryForward: {
      keep_.push_back(upload_i32(be_, d.ids));
      const Tensor words = keep_.back().t;
      keep_.push_back(upload_i32(be_, d.drafts));
      const Tensor verdicts = keep_.back().t.reshape(static_cast<int64_t>(d.drafts.size()) / 2, 2);
      Tensor lag;
      if (!d.lag.empty()) {
        keep_.push_back(upload_i32(be_, d.lag));
        lag = keep_.back().t;
      }
      // The fixes name this backend's addresses of the words.
      std::vector<int32_t> host;
      for (size_t i = 0; i < d.fixes.size(); i += 9) {
        const int32_t* f = d.fixes.data() + i;
        InputFix fix;
        fix.dst = words.as<int32_t>() + f[0];
        fix.table = words.as<int32_t>() + f[1];
        fix.verdict = f[2];
        fix.kind = f[3];
        fix.shift = f[4];
        fix.value = f[5];
        fix.count = f[6];
        fix.stride = f[7];
        fix.block_size = f[8];
        const auto* w = reinterpret_cast<const int32_t*>(&fix);
        host.insert(host.end(), w, w + InputFix::kWords);
      }
      keep_.push_back(upload_i32(be_, host));
      const Tensor fixes =
          keep_.back().t.reshape(static_cast<int64_t>(host.size()) / InputFix::kWords, InputFix::kWords);
      op_ = [this, verdicts, lag, fixes] { be_.carry_forward(verdicts, lag, fixes); };
      output("words", words);  // all of them: words no fix names must keep their values
      break;
    }
    case Op::PagedAttention: {
      attn_ = upload_attn_batch(be_, d.attn);
      const int64_t rows = d.attn.n_rows, q_w = c.heads * hd, kv_w = c.kv_heads * hd;
      const Tensor q = c.strided ? put(act, rows, qkv_w, d.x).col_slice(0, q_w) : put(act, rows, q_w, d.x);
      const Tensor kp = put(act, d.attn.num_slots(), kv_w, d.k_pool), vp = put(act, d.attn.num_slots(), kv_w, d.v_pool);
      const Tensor out = poisoned(act, rows, q_w);
      const bool windowed = c.mask == MaskKind::Window || c.mask == MaskKind::BidirectionalWindow;
      const AttentionMask mask{.causal = c.mask == MaskKind::Causal || c.mask == MaskKind::Window,
                               .window = windowed ? c.window : 0};
      const AttnBatch batch = attn_.batch;
      const int64_t heads = c.heads, kv = c.kv_heads;
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      op_ = [this, q, kp, vp, out, batch, mask, heads, kv, hd, scale] {
        be_.paged_attention(q, kp, vp, out, batch, mask, heads, kv, hd, scale);
      };
      output("out", out);
      break;
    }
  }
}

}  // namespace

std::unique_ptr<BoundCase> bind_case(const OpCase& c, const CaseData& data, Backend& backend) {
  return std::make_unique<Bound>(c, data, backend);
}

Traffic traffic(const OpCase& c, const Backend& backend) {
  const double a = static_cast<double>(dtype_size(backend.activation_dtype()));
  const double w = static_cast<double>(dtype_size(backend.weight_dtype()));
  const double n = static_cast<double>(c.n), dim = static_cast<double>(c.dim);
  const double hd = static_cast<double>(c.head_dim);
  Traffic t;
  switch (c.op) {
    case Op::Embedding: t.bytes = n * dim * (w + (c.f32 ? 4 : a)) + 4 * n; break;
    case Op::Matmul: {
      const double out = static_cast<double>(c.out);
      t.bytes = n * dim * a + out * dim * w + (c.bias ? out * w : 0) + n * out * (c.f32 ? 4 : a);
      t.flops = 2 * n * dim * out;
      break;
    }
    case Op::RmsNorm: t.bytes = n * dim * ((c.f32 ? 4 : a) + a) + dim * w; break;
    case Op::AddRmsNorm: t.bytes = n * dim * (4 + 4 + a + a) + dim * w; break;  // f32 residual read and written
    case Op::Copy: t.bytes = n * dim * (4 + a); break;
    case Op::RopeStoreKv: {
      double rows = 0;
      for (const SeqRows& s : c.seqs) rows += s.rows;
      // q read and written, k and v read and stored, positions and slots.
      t.bytes = rows * (2 * static_cast<double>(c.heads) + 4 * static_cast<double>(c.kv_heads)) * hd * a + 8 * rows;
      break;
    }
    case Op::MatmulRopeStoreKv: {
      double rows = 0;
      for (const SeqRows& s : c.seqs) rows += s.rows;
      const double width = (static_cast<double>(c.heads) + 2 * static_cast<double>(c.kv_heads)) * hd;
      // x and the weight read, qkv written, k and v stored, positions and slots.
      t.bytes = rows * dim * a + width * dim * w + rows * width * a +
                rows * 2 * static_cast<double>(c.kv_heads) * hd * a + 8 * rows;
      t.flops = 2 * rows * dim * width;
      break;
    }
    case Op::MatmulSiluGlu: {
      const double inter = static_cast<double>(c.out);
      t.bytes = n * dim * a + 2 * inter * dim * w + n * inter * a;  // x and w read, out written
      t.flops = 4 * n * dim * inter;
      break;
    }
    case Op::SiluGlu: t.bytes = 3 * n * dim * a; break;
    case Op::GatherRows:
    case Op::ScatterRows: t.bytes = 2 * n * dim * (c.f32 ? 4 : a) + 4 * n; break;
    case Op::Softcap: t.bytes = 8 * n * dim; break;
    case Op::Argmax: t.bytes = 4 * n * dim + 4 * n; break;
    case Op::Sample:
    case Op::Accept: {
      double rows = static_cast<double>(c.n);
      for (const SeqRows& s : c.seqs) rows += s.rows;
      t.bytes = 4 * rows * dim + 36 * rows;  // the logits once, the rows' parameters and tokens
      break;
    }
    case Op::Penalize: {
      double rows = 0;
      for (const SeqRows& s : c.seqs) rows += s.rows;
      t.bytes = 32 * rows;  // the row words; the touched logits are few
      break;
    }
    case Op::CarryForward: t.bytes = 8 * n * (4 + 3 * dim) + 48 * 6 * n; break;  // words read and written, fixes
    case Op::PagedAttention: {
      const double kv_row = static_cast<double>(c.kv_heads) * hd, q_row = static_cast<double>(c.heads) * hd;
      for (const SeqRows& s : c.seqs) {
        const int64_t keys = s.context + s.rows;
        const bool windowed = c.mask == MaskKind::Window || c.mask == MaskKind::BidirectionalWindow;
        const int64_t first = windowed ? std::max<int64_t>(0, s.context - c.window + 1) : 0;
        t.bytes += 2 * static_cast<double>(keys - first) * kv_row * a + 2 * s.rows * q_row * a;
        for (int64_t i = 0; i < s.rows; ++i) {
          const int64_t p = s.context + i;
          const int64_t seen =
              c.mask == MaskKind::Bidirectional ? keys
              : c.mask == MaskKind::Window      ? std::min<int64_t>(p + 1, c.window)
              : c.mask == MaskKind::BidirectionalWindow
                  ? std::min<int64_t>(keys, p + c.window) - std::max<int64_t>(0, p - c.window + 1)
                  : p + 1;
          t.flops += 4 * static_cast<double>(seen) * q_row;
        }
      }
      break;
    }
  }
  return t;
}

}  // namespace flashdraft::ops::testing
