// Paged attention on the GPU: correctness against a float64 host reference
// (--check) and timing at the shapes that matter (--bench, the default), as a
// plain program printing tables. Standalone: it calls the launcher in
// src/ops/cuda/paged_attention.h directly, no backend object.
//
//   bench_attention [--check] [--bench] [--explore] [--only ID[,ID...]] [--csv FILE] [--reps N]
//
// --explore runs tuning sweeps (forced split counts, block order, block size);
// --only runs the points of a comma-separated list of ids (as printed last on
// each row), e.g. one under ncu.
//
// Timing: CUDA events around each call (launches queued back to back), a
// warm-up, the median of --reps (default 30) calls, rotating over enough K/V
// pools that together they exceed 3x the L2 cache. GB/s counts the K and V
// bytes the call must read (each visible key once per kv head); the copy
// bandwidth it is compared with is a device-to-device cudaMemcpy measured here,
// counting bytes read plus bytes written (BENCHMARKS.md's convention).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"
#include "ops/cuda/paged_attention.h"

namespace fo = flashdraft::ops;
namespace fc = flashdraft::ops::cuda;

namespace {

uint16_t f2bf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float bf2f(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
constexpr uint16_t kBfNaN = 0x7fc0;

__global__ void fill_uniform_kernel(__nv_bfloat16* p, size_t n, uint64_t seed, float amp) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    const float u = static_cast<float>(x >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    // Never exactly zero: zeros hide unwritten outputs and wrong indexing.
    float v = (2.f * u - 1.f) * amp;
    if (v == 0.f) v = 0.5f * amp;
    p[i] = __float2bfloat16(v);
  }
}

void fill_uniform(void* p, size_t n, uint64_t seed, float amp) {
  fill_uniform_kernel<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), n, seed, amp);
  CK(cudaGetLastError());
}

template <class T>
T* dalloc(size_t n) {
  T* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T)));
  return p;
}
template <class T>
T* dupload(const std::vector<T>& v) {
  T* p = dalloc<T>(v.size());
  CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

struct Seq {
  int pos0, rows;
};

// Host-side description of one batch over one paged pool.
struct Layout {
  int hd = 128, nh = 32, nkv = 8, bs = 16;
  std::vector<Seq> seqs;
  int n_rows = 0, max_rows = 0, max_keys = 0, max_blocks = 0, pool_blocks = 0;
  std::vector<int32_t> q_start, pos0, tables, positions, slots;
  std::vector<int> spare;  // pool blocks no sequence owns
};

Layout make_layout(int hd, int nh, int nkv, int bs, const std::vector<Seq>& seqs, std::mt19937_64& rng,
                   int spare_blocks, bool shuffle = true) {
  Layout L;
  L.hd = hd;
  L.nh = nh;
  L.nkv = nkv;
  L.bs = bs;
  L.seqs = seqs;
  int owned = 0;
  for (const Seq& s : seqs) {
    const int keys = s.pos0 + s.rows;
    L.max_rows = std::max(L.max_rows, s.rows);
    L.max_keys = std::max(L.max_keys, keys);
    L.max_blocks = std::max(L.max_blocks, (keys + bs - 1) / bs);
    owned += (keys + bs - 1) / bs;
  }
  L.max_blocks += 1;  // a table entry past every sequence's end, pointing at an unowned block
  L.pool_blocks = owned + spare_blocks;
  std::vector<int> perm(L.pool_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  if (shuffle) std::shuffle(perm.begin(), perm.end(), rng);
  L.spare.assign(perm.begin() + owned, perm.end());
  L.tables.assign(static_cast<size_t>(seqs.size()) * L.max_blocks, spare_blocks > 0 ? L.spare[0] : 0);
  int next = 0;
  L.q_start.push_back(0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Seq& s = seqs[i];
    const int nb = (s.pos0 + s.rows + bs - 1) / bs;
    for (int b = 0; b < nb; ++b) L.tables[i * L.max_blocks + b] = perm[next++];
    for (int r = 0; r < s.rows; ++r) {
      const int p = s.pos0 + r;
      L.positions.push_back(p);
      L.slots.push_back(L.tables[i * L.max_blocks + p / bs] * bs + p % bs);
    }
    L.q_start.push_back(L.q_start.back() + s.rows);
    L.pos0.push_back(s.pos0);
  }
  L.n_rows = L.q_start.back();
  return L;
}

struct DeviceMeta {
  int32_t *q_start = nullptr, *pos0 = nullptr, *tables = nullptr, *positions = nullptr, *slots = nullptr;
  fo::AttnBatch batch;
  void upload(const Layout& L) {
    q_start = dupload(L.q_start);
    pos0 = dupload(L.pos0);
    tables = dupload(L.tables);
    positions = dupload(L.positions);
    slots = dupload(L.slots);
    batch.n_seqs = static_cast<int32_t>(L.seqs.size());
    batch.n_rows = L.n_rows;
    batch.max_rows = L.max_rows;
    batch.max_keys = L.max_keys;
    batch.max_blocks = L.max_blocks;
    batch.block_size = L.bs;
    batch.q_start = q_start;
    batch.pos0 = pos0;
    batch.block_tables = tables;
    batch.positions = positions;
    batch.slots = slots;
  }
  void release() {
    for (int32_t* p : {q_start, pos0, tables, positions, slots}) cudaFree(p);
  }
};

fo::Tensor view(void* data, int64_t rows, int64_t cols, int64_t ld) {
  fo::Tensor t;
  t.data = data;
  t.dtype = fo::DType::BF16;
  t.device = fo::Device::CUDA;
  t.rows = rows;
  t.cols = cols;
  t.ld = ld;
  return t;
}

// ------------------------------------------------------------------ check

struct CheckCase {
  std::string name;
  int hd, nh, nkv, bs;
  fo::AttentionMask mask;
  std::vector<Seq> seqs;
  float qamp;
};

struct CheckResult {
  double max_norm = 0, rel_l2 = 0;
  bool finite = true, pad_intact = true;
};

bool check_case(const CheckCase& c, std::mt19937_64& rng, fc::AttentionWorkspace& ws, double* worst) {
  const Layout L = make_layout(c.hd, c.nh, c.nkv, c.bs, c.seqs, rng, 3);
  const int G = c.nh / c.nkv;
  const int kv_cols = c.nkv * c.hd, kv_ld = kv_cols + 8;  // padded stride: columns past cols are never read
  const size_t n_slots = static_cast<size_t>(L.pool_blocks) * c.bs;
  std::vector<uint16_t> hk(n_slots * kv_ld, kBfNaN), hv(n_slots * kv_ld, kBfNaN);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  auto nz = [&](float amp) {
    float v = uni(rng) * amp;
    return f2bf(v == 0.f ? 0.25f * amp : v);
  };
  // Only keys some query of the sequence can see get data; everything else
  // (unowned blocks, keys that fell out of every row's window) stays NaN.
  for (size_t i = 0; i < c.seqs.size(); ++i) {
    const Seq& s = c.seqs[i];
    const int lo = c.mask.window > 0 ? std::max<int64_t>(0, s.pos0 - c.mask.window + 1) : 0;
    for (int j = lo; j < s.pos0 + s.rows; ++j) {
      const size_t slot = static_cast<size_t>(L.tables[i * L.max_blocks + j / c.bs]) * c.bs + j % c.bs;
      for (int e = 0; e < kv_cols; ++e) {
        hk[slot * kv_ld + e] = nz(1.f);
        hv[slot * kv_ld + e] = nz(1.f);
      }
    }
  }
  // q is the first column block of a fused qkv buffer.
  const int qkv_cols = (c.nh + 2 * c.nkv) * c.hd, q_cols = c.nh * c.hd, out_ld = q_cols + 16;
  std::vector<uint16_t> hq(static_cast<size_t>(L.n_rows) * qkv_cols);
  for (auto& x : hq) x = nz(c.qamp);

  // float64 reference.
  const float scale = 1.f / std::sqrt(static_cast<float>(c.hd));
  std::vector<double> ref(static_cast<size_t>(L.n_rows) * q_cols);
  {
    std::vector<std::pair<int, int>> rows;  // (seq, row in seq)
    for (size_t i = 0; i < c.seqs.size(); ++i)
      for (int r = 0; r < c.seqs[i].rows; ++r) rows.emplace_back(static_cast<int>(i), r);
    auto worker = [&](size_t begin, size_t step) {
      std::vector<double> sc;
      for (size_t w = begin; w < rows.size(); w += step) {
        const int si = rows[w].first, r = rows[w].second;
        const Seq& s = c.seqs[si];
        const int p = s.pos0 + r, grow = L.q_start[si] + r, n_keys = s.pos0 + s.rows;
        for (int h = 0; h < c.nh; ++h) {
          const int kh = h / G;
          const uint16_t* qr = &hq[static_cast<size_t>(grow) * qkv_cols + h * c.hd];
          sc.assign(n_keys, -INFINITY);
          double mx = -INFINITY;
          for (int j = 0; j < n_keys; ++j) {
            const bool vis = (c.mask.causal ? j <= p : c.mask.window == 0 || j < p + c.mask.window) &&
                             (c.mask.window == 0 || j > p - c.mask.window);
            if (!vis) continue;
            const size_t slot = static_cast<size_t>(L.tables[si * L.max_blocks + j / c.bs]) * c.bs + j % c.bs;
            const uint16_t* kr = &hk[slot * kv_ld + kh * c.hd];
            double d = 0;
            for (int e = 0; e < c.hd; ++e) d += static_cast<double>(bf2f(qr[e])) * bf2f(kr[e]);
            sc[j] = d * scale;
            mx = std::max(mx, sc[j]);
          }
          double sum = 0;
          std::vector<double> acc(c.hd, 0.0);
          for (int j = 0; j < n_keys; ++j) {
            if (sc[j] == -INFINITY) continue;
            const double pj = std::exp(sc[j] - mx);
            sum += pj;
            const size_t slot = static_cast<size_t>(L.tables[si * L.max_blocks + j / c.bs]) * c.bs + j % c.bs;
            const uint16_t* vr = &hv[slot * kv_ld + kh * c.hd];
            for (int e = 0; e < c.hd; ++e) acc[e] += pj * bf2f(vr[e]);
          }
          for (int e = 0; e < c.hd; ++e) ref[static_cast<size_t>(grow) * q_cols + h * c.hd + e] = acc[e] / sum;
        }
      }
    };
    const unsigned nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (unsigned t = 0; t < nt; ++t) th.emplace_back(worker, t, nt);
    for (auto& t : th) t.join();
  }

  uint16_t* dk = dupload(hk);
  uint16_t* dv = dupload(hv);
  uint16_t* dq = dupload(hq);
  uint16_t* dout = dalloc<uint16_t>(static_cast<size_t>(L.n_rows) * out_ld);
  DeviceMeta meta;
  meta.upload(L);
  const fo::Tensor tq = view(dq, L.n_rows, q_cols, qkv_cols);
  const fo::Tensor tk = view(dk, static_cast<int64_t>(n_slots), kv_cols, kv_ld);
  const fo::Tensor tv = view(dv, static_cast<int64_t>(n_slots), kv_cols, kv_ld);
  const fo::Tensor to = view(dout, L.n_rows, q_cols, out_ld);
  std::vector<uint16_t> hout(static_cast<size_t>(L.n_rows) * out_ld);
  const std::vector<uint16_t> poison(hout.size(), kBfNaN);

  bool ok = true;
  std::string splits_seen;
  std::vector<uint16_t> first_out;  // the automatic choice's output: every other must give the same bits
  // Forced key groupings (automatic layout), then forced warp layouts (automatic grouping).
  const std::pair<int, int> variants[] = {{0, 0}, {1, 0}, {3, 0}, {16, 0}, {0, 14}, {0, 22}, {0, 42}, {0, 41}, {0, 81}};
  for (const auto& [forced, layout] : variants) {
    fc::set_paged_attention_forced_splits(forced);
    fc::set_paged_attention_forced_layout(layout / 10, layout % 10);
    CK(cudaMemcpy(dout, poison.data(), poison.size() * 2, cudaMemcpyHostToDevice));
    try {
      fc::paged_attention(tq, tk, tv, to, meta.batch, c.mask, c.nh, c.nkv, c.hd, scale, ws, 0);
    } catch (const std::exception& e) {
      std::printf("  %-34s forced=%d layout=%d: threw %s\n", c.name.c_str(), forced, layout, e.what());
      ok = false;
      continue;
    }
    CK(cudaDeviceSynchronize());
    const fc::PagedAttentionPlan plan = fc::last_paged_attention_plan();
    if (layout == 0) splits_seen += (splits_seen.empty() ? "" : ",") + std::to_string(plan.splits);
    if (forced == 0 && layout == 0)
      splits_seen += "(rows/cta " + std::to_string(plan.rows_per_cta) + ", " + std::to_string(plan.stages) + " stages)";
    CK(cudaMemcpy(hout.data(), dout, hout.size() * 2, cudaMemcpyDeviceToHost));
    if (first_out.empty()) {
      first_out = hout;
    } else if (hout != first_out) {
      std::printf("  %-34s forced=%d layout=%d: output bits differ from the automatic choice\n", c.name.c_str(), forced,
                  layout);
      ok = false;
    }
    CheckResult res;
    double max_ref = 0, num = 0, den = 0, max_err = 0;
    for (int r = 0; r < L.n_rows; ++r) {
      for (int e = 0; e < q_cols; ++e) {
        const double o = bf2f(hout[static_cast<size_t>(r) * out_ld + e]);
        const double x = ref[static_cast<size_t>(r) * q_cols + e];
        if (!std::isfinite(o)) res.finite = false;
        max_ref = std::max(max_ref, std::fabs(x));
        max_err = std::max(max_err, std::fabs(o - x));
        num += (o - x) * (o - x);
        den += x * x;
      }
      for (int e = q_cols; e < out_ld; ++e)
        if (hout[static_cast<size_t>(r) * out_ld + e] != kBfNaN) res.pad_intact = false;
    }
    res.max_norm = res.finite ? max_err / std::max(max_ref, 1e-30) : INFINITY;
    res.rel_l2 = res.finite ? std::sqrt(num / std::max(den, 1e-300)) : INFINITY;
    const bool pass = res.finite && res.pad_intact && res.max_norm < 2e-2 && res.rel_l2 < 1e-2;
    ok = ok && pass;
    *worst = std::max(*worst, res.max_norm);
    if (!pass || (forced == 0 && layout == 0))
      std::printf("  %-34s groups=%-3d max_err/max|ref| %.2e  rel_l2 %.2e  %s%s%s\n", c.name.c_str(), plan.splits,
                  res.max_norm, res.rel_l2, res.finite ? "" : "NON-FINITE ", res.pad_intact ? "" : "PAD-WRITTEN ",
                  pass ? "ok" : "FAIL");
  }
  fc::set_paged_attention_forced_splits(0);
  fc::set_paged_attention_forced_layout(0, 0);
  std::printf("  %-34s (key groups run: %s)\n", "", splits_seen.c_str());
  meta.release();
  for (void* p : {static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(dq), static_cast<void*>(dout)})
    cudaFree(p);
  return ok;
}

int run_checks() {
  std::mt19937_64 rng(1234);
  fc::AttentionWorkspace ws;
  const fo::AttentionMask causal{true, 0}, bidir{false, 0};
  auto sliding = [](int64_t w) { return fo::AttentionMask{true, w}; };
  auto bidir_win = [](int64_t w) { return fo::AttentionMask{false, w}; };
  auto rep = [](int n, Seq s) { return std::vector<Seq>(n, s); };
  // n sequences with pos0 = first + i * step and `rows` rows each.
  auto spread = [](int n, int first, int step, int rows) {
    std::vector<Seq> v;
    for (int i = 0; i < n; ++i) v.push_back({first + i * step, rows});
    return v;
  };
  std::vector<CheckCase> cases = {
      {"decode d128 g4 causal ctx<=32k", 128, 32, 8, 16, causal, {{0, 1}, {99, 1}, {4999, 1}, {32767, 1}}, 2.f},
      {"decode d64 g1 causal", 64, 8, 8, 16, causal, {{2047, 1}, {31000, 1}, {5, 1}}, 4.f},
      {"decode d128 g8 bs7", 128, 16, 2, 7, causal, {{1000, 1}, {3, 1}, {16384, 1}}, 2.f},
      {"decode d128 g4 x32 ctx1k", 128, 32, 8, 16, causal, rep(32, {1023, 1}), 2.f},
      {"decode d128 g4 sliding W64", 128, 32, 8, 16, sliding(64), {{5000, 1}, {30, 1}}, 2.f},
      {"verify16 d128 g4 causal", 128, 32, 8, 16, causal, {{1024, 16}, {8000, 16}, {0, 16}, {37, 16}}, 2.f},
      {"verify16 d64 g8 causal", 64, 32, 4, 16, causal, {{1024, 16}, {3, 16}}, 4.f},
      {"block16 d128 g4 bidir", 128, 32, 8, 16, bidir, {{1024, 16}, {8191, 16}, {5, 16}}, 2.f},
      {"block16 d64 g1 bidir", 64, 4, 4, 16, bidir, {{700, 16}, {0, 16}}, 6.f},
      {"block16 d128 g4 sliding W2048", 128, 32, 8, 16, sliding(2048), {{8192, 16}, {1000, 16}, {2040, 16}}, 2.f},
      {"block16 d64 g8 sliding W64", 64, 16, 2, 16, sliding(64), {{300, 16}, {50, 16}, {1000, 1}}, 4.f},
      {"block16 d128 g4 bidir W100", 128, 32, 8, 16, bidir_win(100), {{500, 16}, {20, 16}}, 2.f},
      {"block16 d128 g4 ctx32k W2048", 128, 32, 8, 16, sliding(2048), {{32752, 16}}, 2.f},
      {"block16 d128 g4 ctx32k bidir", 128, 32, 8, 16, bidir, {{32752, 16}}, 2.f},
      {"prefill200 d128 g4 causal", 128, 32, 8, 16, causal, {{0, 200}, {1000, 200}}, 2.f},
      {"prefill200 d64 g1 causal", 64, 8, 8, 16, causal, {{0, 200}, {333, 200}}, 4.f},
      {"prefill200 d128 g8 W50", 128, 16, 2, 16, sliding(50), {{100, 200}}, 2.f},
      {"mixed rows d128 g4 bs32", 128, 32, 8, 32, causal, {{100, 1}, {2000, 16}, {0, 200}, {5000, 1}}, 2.f},
      {"mixed rows d64 g4 bs1", 64, 16, 4, 1, causal, {{300, 1}, {100, 16}, {7, 40}}, 2.f},
      {"mixed rows d128 g4 bidir bs5", 128, 32, 8, 5, bidir, {{77, 16}, {0, 1}, {250, 33}}, 2.f},
      // Batches large enough for the 3-stage ring (two CTAs per SM) in every warp layout.
      {"verify16 x32 d128 g4 causal", 128, 32, 8, 16, causal, spread(32, 100, 37, 16), 2.f},
      {"block16 x32 d64 g4 sliding W100", 64, 32, 8, 16, sliding(100), spread(32, 20, 23, 16), 2.f},
      {"block16 x16 d64 g2 bidir", 64, 32, 16, 16, bidir, spread(16, 5, 41, 16), 2.f},
      {"block16 x16 d128 g2 causal", 128, 32, 16, 16, causal, spread(16, 900, 13, 16), 2.f},
      {"decode x40 d64 g8 causal", 64, 32, 4, 16, causal, spread(40, 1, 97, 1), 4.f},
      {"decode x40 d128 g4 causal", 128, 32, 8, 16, causal, spread(40, 1000, 61, 1), 2.f},
  };
  std::printf("correctness vs float64 host reference (pass: max_err/max|ref| < 2e-2, rel_l2 < 1e-2, all finite)\n");
  bool all = true;
  double worst = 0;
  for (const CheckCase& c : cases) all = check_case(c, rng, ws, &worst) && all;
  std::printf("check %s: %zu cases x 4 key groupings and 5 warp layouts (bit-identical to each other), worst max_err/max|ref| %.2e\n",
              all ? "PASSED" : "FAILED", cases.size(), worst);
  return all ? 0 : 1;
}

// ------------------------------------------------------------------ bench

struct Point {
  std::string name;
  int batch, ctx, rows;
  fo::AttentionMask mask;
  int nh = 32, nkv = 8;
  bool shuffle = true;  // random block order (the default) or each sequence's blocks in order
  int splits = 0;       // forced key groups (0: the launcher's choice)
  int bs = 16;
  int split_keys = 0;   // keys per split (0: the default)
  int layout = 0;       // forced warp layout, 10 * warps along M + warps per tile (0: the launcher's choice)
  int bucket = 0;       // max_keys stated this high, as a recorded step states its context bucket (0: exact)
};

// Keys one sequence's call must read: the union of its rows' visible ranges.
int64_t keys_read(const Point& pt) {
  const int64_t kv = pt.ctx + (pt.rows == 1 ? 0 : pt.rows);  // decode: ctx counts the new token
  if (pt.mask.window > 0) {
    const int64_t first = (pt.rows == 1 ? pt.ctx - 1 : pt.ctx);
    return kv - std::max<int64_t>(0, first - pt.mask.window + 1);
  }
  return kv;
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct BenchRow {
  std::string name;
  double us, spread, mb, gbps, frac;
  fc::PagedAttentionPlan plan;
};

std::string point_id(const Point& pt) {
  std::string id = pt.name + "_b" + std::to_string(pt.batch) + "_ctx" + std::to_string(pt.ctx);
  if (pt.nh != 32 || pt.nkv != 8) id += "_h" + std::to_string(pt.nh) + "kv" + std::to_string(pt.nkv);
  if (!pt.shuffle) id += "_inorder";
  if (pt.splits) id += "_split" + std::to_string(pt.splits);
  if (pt.bs != 16) id += "_bs" + std::to_string(pt.bs);
  if (pt.split_keys) id += "_sk" + std::to_string(pt.split_keys);
  if (pt.layout) id += "_w" + std::to_string(pt.layout);
  if (pt.bucket) id += "_bucket" + std::to_string(pt.bucket);
  return id;
}

std::vector<Point> bench_points() {
  const fo::AttentionMask causal{true, 0}, bidir{false, 0}, sliding{true, 2048};
  std::vector<Point> pts;
  for (int b : {1, 32})
    for (int ctx : {1024, 8192, 32768}) pts.push_back({"decode", b, ctx, 1, causal});
  for (int b : {1, 32})
    for (int ctx : {1024, 8192}) pts.push_back({"block16_bidir", b, ctx, 16, bidir});
  for (int b : {1, 32})
    for (int ctx : {1024, 8192}) pts.push_back({"block16_sliding2048", b, ctx, 16, sliding});
  for (int b : {1, 32})
    for (int ctx : {1024, 8192}) pts.push_back({"block16_causal", b, ctx, 16, causal});
  pts.push_back({"prefill2048", 1, 0, 2048, causal});
  // The last 2048-token chunk of an 8192-token prompt (the engine prefills long prompts in chunks).
  pts.push_back({"prefill2048", 1, 6144, 2048, causal});
  return pts;
}

// Tuning sweeps: forced key-group counts, split lengths, block order, and a
// layout where one kv head's slot rows are contiguous (1 kv head: each 16-slot
// block is 4 KB in one piece).
std::vector<Point> explore_points() {
  const fo::AttentionMask causal{true, 0};
  std::vector<Point> pts;
  // Block order: each sequence's blocks in pool order (a fresh pool's
  // allocator hands them out so) against the default shuffle.
  for (int ctx : {8192, 32768})
    for (int b : {1, 32}) pts.push_back({"decode", b, ctx, 1, causal, 32, 8, false, 0});
  // Pool blocks of 32-128 slots instead of 16: fewer block jumps a 64-key tile.
  for (int bs : {32, 64, 128}) {
    for (int b : {1, 32})
      for (int ctx : {1024, 8192, 32768}) pts.push_back({"decode", b, ctx, 1, causal, 32, 8, true, 0, bs});
    for (int ctx : {1024, 8192}) pts.push_back({"block16_causal", 1, ctx, 16, causal, 32, 8, true, 0, bs});
    pts.push_back({"block16_bidir", 32, 8192, 16, fo::AttentionMask{false, 0}, 32, 8, true, 0, bs});
    pts.push_back({"prefill2048", 1, 0, 2048, causal, 32, 8, true, 0, bs});
  }
  for (int g : {8, 16, 32, 64}) pts.push_back({"decode", 1, 32768, 1, causal, 32, 8, true, g});
  for (int g : {4, 8, 16, 32}) pts.push_back({"decode", 1, 8192, 1, causal, 32, 8, true, g});
  for (int g : {16, 32}) pts.push_back({"decode", 1, 16384, 1, causal, 32, 8, true, g});
  pts.push_back({"decode", 1, 1024, 1, causal, 32, 8, true, 1});
  pts.push_back({"decode", 32, 1024, 1, causal, 32, 8, true, 2});
  for (int sk : {128, 256, 512, 1024}) {
    for (int ctx : {1024, 4096, 8192, 16384, 32768}) pts.push_back({"decode", 1, ctx, 1, causal, 32, 8, true, 0, 16, sk});
    pts.push_back({"block16_causal", 1, 1024, 16, causal, 32, 8, true, 0, 16, sk});
    pts.push_back({"decode", 32, 8192, 1, causal, 32, 8, true, 0, 16, sk});
    pts.push_back({"prefill2048", 1, 0, 2048, causal, 32, 8, true, 0, 16, sk});
  }
  // Warp layouts for 16-row blocks (64 GQA entries a kv head) at the batches of a DFlash cycle.
  const fo::AttentionMask bidir{false, 0};
  for (int layout : {14, 22, 42, 41})
    for (int b : {1, 2, 4, 8})
      for (int ctx : {1024, 8192}) {
        pts.push_back({"block16_causal", b, ctx, 16, causal, 32, 8, true, 0, 16, 0, layout});
        pts.push_back({"block16_bidir", b, ctx, 16, bidir, 32, 8, true, 0, 16, 0, layout});
      }
  for (int b : {1, 8})
    for (int ctx : {1024, 8192}) pts.push_back({"decode", b, ctx, 1, causal});
  // Long key ranges, whose split reduce folds more than 32 slots a row.
  pts.push_back({"decode", 1, 16384, 1, causal});  // (decode at 32k is a --bench point)
  for (int ctx : {16384, 32768}) pts.push_back({"block16_causal", 1, ctx, 16, causal});
  // A recorded step past 8k keys is launched for the 16384-key bucket: the
  // same calls with max_keys stated that high.
  for (int bucket : {0, 16384})
    for (int ctx : {8208, 12000}) {
      pts.push_back({"decode", 1, ctx, 1, causal, 32, 8, true, 0, 16, 0, 0, bucket});
      pts.push_back({"block16_bidir", 1, ctx, 16, bidir, 32, 8, true, 0, 16, 0, 0, bucket});
      pts.push_back({"block16_causal", 1, ctx, 16, causal, 32, 8, true, 0, 16, 0, 0, bucket});
    }
  // Batch-1 blocks past 2048 keys: 4 x 2 (one CTA a multiprocessor) against
  // 4 x 1 (two), exact and at the 16384-key bucket, where 4 x 2's last key
  // group takes a long tail (past 8192 + 512 keys its groups double).
  for (int layout : {0, 42, 41}) {
    for (int ctx : {4096, 8192}) {
      pts.push_back({"block16_bidir", 1, ctx, 16, bidir, 32, 8, true, 0, 16, 0, layout});
      pts.push_back({"block16_causal", 1, ctx, 16, causal, 32, 8, true, 0, 16, 0, layout});
    }
    for (int ctx : {8400, 8600, 12000, 16368}) {
      pts.push_back({"block16_bidir", 1, ctx, 16, bidir, 32, 8, true, 0, 16, 0, layout, 16384});
      pts.push_back({"block16_causal", 1, ctx, 16, causal, 32, 8, true, 0, 16, 0, layout, 16384});
    }
  }
  return pts;
}

// Whether `id` is one of the comma-separated ids in `list`.
bool listed(const std::string& list, const std::string& id) {
  size_t from = 0;
  while (from <= list.size()) {
    const size_t to = std::min(list.find(',', from), list.size());
    if (list.compare(from, to - from, id) == 0) return true;
    from = to + 1;
  }
  return false;
}

int run_bench(const char* csv_path, int reps, const std::vector<Point>& pts, const char* only) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const double copy = only ? 3000.0 : measure_copy_bandwidth() / 1e9;
  std::printf("\ndevice %s, %d SMs, L2 %d MB; device-to-device copy %.0f GB/s (read + write)\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, copy);
  const int hd = 128;

  std::mt19937_64 rng(42);
  fc::AttentionWorkspace ws;
  cudaEvent_t ev[2][256];
  reps = std::min(reps, 256);
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventCreate(&ev[0][i]));
    CK(cudaEventCreate(&ev[1][i]));
  }
  std::vector<BenchRow> out;
  std::printf("%-22s %5s %6s %5s %10s %8s %9s %8s %7s %s\n", "point", "batch", "ctx", "rows", "time_us", "+-us",
              "KV_MB", "GB/s", "of_copy", "plan (warps m x k, m_tiles, key groups x keys, ctas, stages, CTAs a multiprocessor)");
  for (const Point& pt : pts) {
    if (only && !listed(only, point_id(pt))) continue;
    const int nh = pt.nh, nkv = pt.nkv, bs = pt.bs;
    const int pos0 = pt.rows == 1 ? pt.ctx - 1 : pt.ctx;
    const Layout L = make_layout(hd, nh, nkv, bs, std::vector<Seq>(pt.batch, Seq{pos0, pt.rows}), rng, 0, pt.shuffle);
    const size_t n_slots = static_cast<size_t>(L.pool_blocks) * bs;
    const size_t kv_elems = n_slots * nkv * hd;
    const double kv_bytes = 2.0 * kv_elems * 2;
    const int n_sets = static_cast<int>(std::min<double>(8, std::ceil(3.0 * prop.l2CacheSize / kv_bytes)));
    std::vector<void*> ks, vs;
    for (int i = 0; i < n_sets; ++i) {
      ks.push_back(dalloc<uint16_t>(kv_elems));
      vs.push_back(dalloc<uint16_t>(kv_elems));
      fill_uniform(ks.back(), kv_elems, 100 + 2 * i, 1.f);
      fill_uniform(vs.back(), kv_elems, 101 + 2 * i, 1.f);
    }
    const int qkv_cols = (nh + 2 * nkv) * hd;
    uint16_t* dq = dalloc<uint16_t>(static_cast<size_t>(L.n_rows) * qkv_cols);
    uint16_t* dout = dalloc<uint16_t>(static_cast<size_t>(L.n_rows) * nh * hd);
    fill_uniform(dq, static_cast<size_t>(L.n_rows) * qkv_cols, 5, 2.f);
    DeviceMeta meta;
    meta.upload(L);
    const fo::Tensor tq = view(dq, L.n_rows, nh * hd, qkv_cols);
    const fo::Tensor to = view(dout, L.n_rows, nh * hd, nh * hd);
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    auto call = [&](int set) {
      const fo::Tensor tk = view(ks[set], static_cast<int64_t>(n_slots), nkv * hd, nkv * hd);
      const fo::Tensor tv = view(vs[set], static_cast<int64_t>(n_slots), nkv * hd, nkv * hd);
      fo::AttnBatch batch = meta.batch;
      batch.max_keys = std::max(batch.max_keys, pt.bucket);
      fc::paged_attention(tq, tk, tv, to, batch, pt.mask, nh, nkv, hd, scale, ws, 0);
    };
    fc::set_paged_attention_forced_splits(pt.splits);
    fc::set_paged_attention_split_keys(pt.split_keys);
    fc::set_paged_attention_forced_layout(pt.layout / 10, pt.layout % 10);
    for (int i = 0; i < 5; ++i) call(i % n_sets);
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < reps; ++i) {
      CK(cudaEventRecord(ev[0][i]));
      call(i % n_sets);
      CK(cudaEventRecord(ev[1][i]));
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    std::vector<float> t(reps);
    for (int i = 0; i < reps; ++i) CK(cudaEventElapsedTime(&t[i], ev[0][i], ev[1][i]));
    std::vector<float> sorted = t;
    std::sort(sorted.begin(), sorted.end());
    BenchRow r;
    r.name = pt.name;
    r.us = median(t) * 1e3;
    r.spread = 0.5 * (sorted[reps * 3 / 4] - sorted[reps / 4]) * 1e3;  // half the interquartile range
    r.mb = static_cast<double>(pt.batch) * keys_read(pt) * nkv * hd * 2 * 2 / 1e6;
    r.gbps = r.mb * 1e6 / (r.us * 1e-6) / 1e9;
    r.frac = r.gbps / copy;
    r.plan = fc::last_paged_attention_plan();
    fc::set_paged_attention_forced_splits(0);
    fc::set_paged_attention_split_keys(0);
    fc::set_paged_attention_forced_layout(0, 0);
    std::printf("%-22s %5d %6d %5d %10.1f %8.1f %9.1f %8.0f %7.2f %dx%d, %d, %d x %d, %d, %d, %d/SM  %s\n", pt.name.c_str(),
                pt.batch, pt.ctx, pt.rows, r.us, r.spread, r.mb, r.gbps, r.frac, r.plan.rows_per_cta / 16,
                r.plan.warps_k, r.plan.m_tiles,
                r.plan.splits, r.plan.chunk_keys, r.plan.ctas, r.plan.stages, r.plan.ctas_per_sm, point_id(pt).c_str());
    std::fflush(stdout);
    r.name = point_id(pt);
    out.push_back(r);
    meta.release();
    for (void* p : ks) cudaFree(p);
    for (void* p : vs) cudaFree(p);
    cudaFree(dq);
    cudaFree(dout);
  }
  std::printf("\nsummary (ours, %s, copy %.0f GB/s)\n| point | us | GB/s | of copy |\n|---|---|---|---|\n", prop.name,
              copy);
  for (const BenchRow& r : out) std::printf("| %s | %.1f | %.0f | %.2f |\n", r.name.c_str(), r.us, r.gbps, r.frac);
  if (csv_path) {
    FILE* f = std::fopen(csv_path, "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", csv_path);
      return 1;
    }
    std::fprintf(f, "point,us,spread_us,kv_mb,gbps,of_copy,copy_gbps\n");
    for (const BenchRow& r : out)
      std::fprintf(f, "%s,%.3f,%.3f,%.3f,%.1f,%.4f,%.1f\n", r.name.c_str(), r.us, r.spread, r.mb, r.gbps, r.frac, copy);
    std::fclose(f);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false, bench = false, explore = false;
  const char* csv = nullptr;
  const char* only = nullptr;
  int reps = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check") {
      check = true;
    } else if (a == "--bench") {
      bench = true;
    } else if (a == "--explore") {
      explore = true;
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--csv" && i + 1 < argc) {
      csv = argv[++i];
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(5, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--check] [--bench] [--explore] [--only ID[,ID...]] [--csv FILE] [--reps N]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!check && !bench && !explore && !only) bench = true;
  int rc = 0;
  try {
    if (check) rc |= run_checks();
    if (bench) rc |= run_bench(csv, reps, bench_points(), nullptr);
    if (explore) rc |= run_bench(nullptr, reps, explore_points(), nullptr);
    if (only) {
      std::vector<Point> all = bench_points(), more = explore_points();
      all.insert(all.end(), more.begin(), more.end());
      rc |= run_bench(bench ? nullptr : csv, reps, all, only);  // (--csv goes to --bench's table when both run)
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return rc;
}
