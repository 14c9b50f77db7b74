// Standalone check and timing of the batch-invariant GEMM (src/ops/cuda/matmul.*,
// gemm_tiles.*) against a float64 reference and against cuBLASLt (the former
// forward path: one algorithm per weight shape) and cuBLAS (its own choice per
// call), all in one run. Built directly with nvcc on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc -o gemm_proto bench/gemm_proto.cu \
//     src/ops/cuda/{gemm_tiles.cu,matmul.cpp,matmul_tiles.cu,matmul_cublaslt.cpp,checks.cpp,device.cpp,add_bias.cu} \
//     src/ops/backend.cpp -lcublasLt -lcublas
//   ./gemm_proto [check] [invariance] [tiles] [small] [bench] [prefill]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda/gemm_tiles.h"
#include "ops/cuda/matmul_cublaslt.h"
#include "ops/cuda/matmul_tiles.h"

using namespace flashdraft::ops;
using namespace flashdraft::ops::cuda;
using bf16 = __nv_bfloat16;

namespace {

__device__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

template <class T>
__global__ void fill_kernel(T* p, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float u = (hash32(seed * 0x9e3779b97f4a7c15ull + i) >> 8) * (1.0f / 16777216.0f);
    p[i] = static_cast<T>(lo + (hi - lo) * u);
  }
}
template <class T>
void fill(T* p, size_t n, uint64_t seed, float lo, float hi) {
  fill_kernel<<<1024, 256>>>(p, n, seed, lo, hi);
  CK(cudaGetLastError());
}

// y_ref[m, n] = sum_k x[m, k] w[n, k] (+ bias) in float64, one warp per element.
__global__ void ref_kernel(const bf16* x, int64_t ldx, const bf16* w, int64_t ldw, const void* bias, bool bias_f32,
                           double* y, int M, int N, int K) {
  const int64_t e = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (e >= int64_t(M) * N) return;
  const int m = int(e / N), n = int(e % N);
  double s = 0;
  for (int k = lane; k < K; k += 32) s += double(__bfloat162float(x[m * ldx + k])) * __bfloat162float(w[n * ldw + k]);
  for (int o = 16; o; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) {
    if (bias) s += bias_f32 ? static_cast<const float*>(bias)[n] : __bfloat162float(static_cast<const bf16*>(bias)[n]);
    y[e] = s;
  }
}

// A small kernel standing in for the rmsnorm / silu that precede each GEMM of
// a decode step; with `trigger` it lets a dependent launch start at once.
__global__ void touch_kernel(bf16* x, int n, bool trigger) {
  if (trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += __bfloat162float(x[i]);
  if (s == 12345.f) x[threadIdx.x] = __float2bfloat16(0.f);
}

void* dalloc(size_t bytes) {
  void* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(bytes, 16)));
  return p;
}

Tensor view(void* p, DType dt, int64_t rows, int64_t cols, int64_t ld) { return Tensor{p, dt, Device::CUDA, rows, cols, ld}; }

// Host copy of y (rows x cols, ld) as floats, and its raw bytes.
std::vector<float> get_y(const Tensor& y) {
  const size_t es = dtype_size(y.dtype);
  std::vector<unsigned char> raw(size_t(y.rows) * y.cols * es);
  CK(cudaMemcpy2D(raw.data(), y.cols * es, y.data, y.ld * es, y.cols * es, y.rows, cudaMemcpyDeviceToHost));
  std::vector<float> out(size_t(y.rows) * y.cols);
  for (size_t i = 0; i < out.size(); ++i) {
    if (y.dtype == DType::F32) {
      std::memcpy(&out[i], &raw[i * 4], 4);
    } else {
      uint32_t u = uint32_t(raw[i * 2] | (raw[i * 2 + 1] << 8)) << 16;
      std::memcpy(&out[i], &u, 4);
    }
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const float* b, size_t n) { return std::memcmp(a.data(), b, n * 4) == 0; }

struct Shape {
  const char* name;
  int n, k;
  bool f32;
};
const Shape kShapes[] = {{"qkv", 6144, 4096, false},  {"o", 4096, 4096, false},    {"gate_up", 24576, 4096, false},
                         {"down", 4096, 12288, false}, {"lm_head", 151936, 4096, true}, {"fc", 4096, 20480, false},
                         {"kv_fused", 10240, 4096, false}};

// A tiled copy of the s.n x s.k weight w (queued on the default stream).
bf16* tiled_copy(bf16* w, const Shape& s) {
  auto* t = static_cast<bf16*>(dalloc(size_t(matmul_tiles_elems(s.n, s.k)) * 2));
  pack_matmul_tiles(view(w, DType::BF16, s.n, s.k, s.k), t, 0);
  return t;
}

const char* tile_name(GemmTile t) {
  return t == GemmTile::Rows16    ? "r16"
         : t == GemmTile::Rows32  ? "r32"
         : t == GemmTile::Rows64  ? "r64"
         : t == GemmTile::Rows128 ? "r128"
                                  : "r192";
}

int failures = 0;

// ---- check: odd shapes, strides, bias, f32 out; every tile and split mode
// must match the float64 reference and give the same bits as each other.
void check(Matmul& mm) {
  struct Case {
    int m, n, k;
    int bias;  // 0 none, 1 bf16, 2 f32
    bool f32, strided;
  };
  const Case cases[] = {
      {1, 1000, 392, 0, false, false},  {5, 1000, 392, 1, false, true},    {16, 1152, 384, 2, false, false},
      {17, 640, 384, 1, true, true},    {33, 1000, 8, 0, false, false},    {64, 129, 1032, 2, true, false},
      {100, 8192, 384, 0, true, true},  {300, 1024, 768, 1, false, true},  {1, 6144, 4096, 1, false, false},
      {16, 4096, 12288, 0, false, true}, {200, 4096, 12288, 2, false, true}, {7, 151936, 384, 0, true, false},
      {3, 17, 4104, 0, false, false},   {130, 4100, 264, 2, false, false},
  };
  std::printf("## check (nmse vs float64; every tile x split gives the default's bits)\n");
  for (const Case& c : cases) {
    const int64_t ldx = c.strided ? c.k + 64 : c.k, ldy = c.strided ? c.n + 3 : c.n;
    bf16* xb = static_cast<bf16*>(dalloc(size_t(c.m) * ldx * 2 + 256));
    bf16* wb = static_cast<bf16*>(dalloc(size_t(c.n) * c.k * 2));
    void* bias = c.bias ? dalloc(size_t(c.n) * 4) : nullptr;
    const DType ydt = c.f32 ? DType::F32 : DType::BF16;
    void* yb = dalloc(size_t(c.m) * ldy * 4);
    fill(xb, size_t(c.m) * ldx, 11 + c.m, -1.f, 1.f);
    fill(wb, size_t(c.n) * c.k, 12 + c.n, -0.05f, 0.05f);
    if (c.bias == 1) fill(static_cast<bf16*>(bias), c.n, 13, -1.f, 1.f);
    if (c.bias == 2) fill(static_cast<float*>(bias), c.n, 13, -1.f, 1.f);
    const Tensor x = view(xb + (c.strided ? 64 : 0), DType::BF16, c.m, c.k, ldx);
    const Tensor w = view(wb, DType::BF16, c.n, c.k, c.k);
    bf16* tb = tiled_copy(wb, Shape{"", c.n, c.k, false});
    Tensor wt = view(tb, DType::BF16, c.n, c.k, c.k);
    wt.layout = Layout::MatmulTiles;
    const Tensor b = view(bias, c.bias == 2 ? DType::F32 : DType::BF16, 1, c.n, c.n);
    const Tensor y = view(yb, ydt, c.m, c.n, ldy);
    double* ref = static_cast<double*>(dalloc(size_t(c.m) * c.n * 8));
    ref_kernel<<<unsigned((int64_t(c.m) * c.n * 32 + 255) / 256), 256>>>(
        static_cast<const bf16*>(x.data), ldx, wb, c.k, bias, c.bias == 2, ref, c.m, c.n, c.k);
    CK(cudaGetLastError());
    std::vector<double> r(size_t(c.m) * c.n);
    CK(cudaMemcpy(r.data(), ref, r.size() * 8, cudaMemcpyDeviceToHost));

    CK(cudaMemset(yb, 0xff, size_t(c.m) * ldy * 4));  // NaN everywhere: unwritten elements show
    mm.run(x, w, c.bias ? &b : nullptr, y, 0);
    CK(cudaDeviceSynchronize());
    const auto def = get_y(y);
    double num = 0, den = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      num += (def[i] - r[i]) * (def[i] - r[i]);
      den += r[i] * r[i];
    }
    const double nmse = num / den;
    const double bound = c.f32 ? 1e-8 : 1e-5;
    bool ok = nmse <= bound;  // NaN fails
    std::string bad;
    // Every tile and split, on the row-major weight and on its tiled copy.
    for (const Tensor* wv : {&w, static_cast<const Tensor*>(&wt)})
      for (GemmTile t : {GemmTile::Rows16, GemmTile::Rows32, GemmTile::Rows64, GemmTile::Rows128, GemmTile::Rows192})
        for (bool split : {false, true}) {
          CK(cudaMemset(yb, 0xff, size_t(c.m) * ldy * 4));
          const Matmul::Choice ch{t, split};
          mm.run(x, *wv, c.bias ? &b : nullptr, y, 0, &ch);
          CK(cudaDeviceSynchronize());
          if (!same_bits(get_y(y), def.data(), def.size())) {
            ok = false;
            bad += std::string(" ") + tile_name(t) + (split ? "/split" : "") + (wv == &w ? "" : "/tiled");
          }
        }
    const auto ch = mm.choose(c.m, c.n, c.k);
    std::printf("%s m=%d n=%d k=%d bias=%d f32=%d strided=%d slice=%d [%s%s] nmse %.2e%s%s\n", ok ? "ok  " : "FAIL",
                c.m, c.n, c.k, c.bias, c.f32, c.strided, mm.slice(c.n, c.k), tile_name(ch.tile),
                ch.split ? "/split" : "", nmse, bad.empty() ? "" : " differing bits:", bad.c_str());
    failures += !ok;
    for (void* p : {static_cast<void*>(xb), static_cast<void*>(wb), static_cast<void*>(tb), bias, yb,
                    static_cast<void*>(ref)})
      if (p) CK(cudaFree(p));
  }
}

// ---- invariance: rows computed in a call of M rows equal the same rows of a 2048-row call.
void invariance(Matmul& mm) {
  std::printf("## invariance (rows of an M-row call vs the same rows of a 2048-row call, bit for bit)\n");
  const int R = 2048;
  for (const Shape& s : kShapes) {
    bf16* x = static_cast<bf16*>(dalloc(size_t(R) * s.k * 2));
    bf16* w = static_cast<bf16*>(dalloc(size_t(s.n) * s.k * 2));
    const DType ydt = s.f32 ? DType::F32 : DType::BF16;
    const size_t es = s.f32 ? 4 : 2;
    void* yall = dalloc(size_t(R) * s.n * es);
    void* ypart = dalloc(size_t(R) * s.n * es);
    fill(x, size_t(R) * s.k, 21, -1.f, 1.f);
    fill(w, size_t(s.n) * s.k, 22, -0.03f, 0.03f);
    bf16* tw = tiled_copy(w, s);
    Tensor W = view(tw, DType::BF16, s.n, s.k, s.k);  // the models' layout
    W.layout = Layout::MatmulTiles;
    mm.run(view(x, DType::BF16, R, s.k, s.k), W, nullptr, view(yall, ydt, R, s.n, s.n), 0);
    CK(cudaDeviceSynchronize());
    const auto all = get_y(view(yall, ydt, R, s.n, s.n));
    int bad = 0, total = 0;
    std::string where;
    for (int m : {1, 2, 3, 8, 16, 17, 32, 48, 64, 100, 128, 200, 300, 400})
      for (int r0 : {0, R - m}) {
        mm.run(view(x + size_t(r0) * s.k, DType::BF16, m, s.k, s.k), W, nullptr, view(ypart, ydt, m, s.n, s.n), 0);
        CK(cudaDeviceSynchronize());
        const auto part = get_y(view(ypart, ydt, m, s.n, s.n));
        ++total;
        if (!same_bits(part, all.data() + size_t(r0) * s.n, part.size())) {
          ++bad;
          where += " m" + std::to_string(m) + "@" + std::to_string(r0);
        }
      }
    std::printf("%s %-8s %6dx%-6d slice %5d: %d/%d row sets identical%s\n", bad ? "FAIL" : "ok  ", s.name, s.n, s.k,
                mm.slice(s.n, s.k), total - bad, total, where.c_str());
    failures += bad != 0;
    for (void* p : {static_cast<void*>(x), static_cast<void*>(w), static_cast<void*>(tw), yall, ypart}) CK(cudaFree(p));
  }
}

// Median microseconds of fn(i) (i = call index, for rotating buffers), each
// sample `inner` back-to-back calls between two events.
template <class F>
double time_us(F fn, int inner = 20, int samples = 9) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) fn(i);
  std::vector<float> t;
  int call = 0;
  for (int s = 0; s < samples; ++s) {
    CK(cudaEventRecord(e0));
    for (int i = 0; i < inner; ++i) fn(call++);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.f / inner);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Peers {
  CublasLtMatmul lt{64u << 20};
  cublasHandle_t blas = nullptr;
  Peers() {
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) std::exit(1);
  }
};

void blas_gemm(cublasHandle_t h, const Tensor& x, const Tensor& w, const Tensor& y) {
  const float alpha = 1.f, beta = 0.f;
  const cublasStatus_t s =
      cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(w.rows), int(x.rows), int(x.cols), &alpha, w.data, CUDA_R_16BF,
                   int(w.ld), x.data, CUDA_R_16BF, int(x.ld), &beta, y.data,
                   y.dtype == DType::F32 ? CUDA_R_32F : CUDA_R_16BF, int(y.ld), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::printf("cublasGemmEx failed %d\n", int(s));
    std::exit(1);
  }
}

// ---- bench: M = 1..128 per shape, weight copies rotated so that they never sit in L2.
void bench(Matmul& mm, Peers& p, double bw, bool prefill_only) {
  const std::vector<int> ms =
      prefill_only ? std::vector<int>{2048} : std::vector<int>{1, 16, 32, 64, 96, 128, 192, 256, 384, 512, 1024};
  if (prefill_only)
    std::printf("## prefill M=2048: chosen tile, us, TFLOP/s (ours default on the tiled weight, ours row-major, "
                "ours r128 tiled, ours r192 tiled, cuBLASLt one-algo path, cuBLAS own choice)\n");
  else
    std::printf("## decode/verify: us and %% of copy bandwidth (%.0f GB/s): ours (tiled weight) | ours row-major | cuBLASLt one-algo | cuBLAS\n",
                bw / 1e9);
  double layer_us[3] = {0, 0, 0}, head_us[3] = {0, 0, 0}, layer_bytes = 0, head_bytes = 0;
  for (const Shape& s : kShapes) {
    const size_t wbytes = size_t(s.n) * s.k * 2;
    const int copies = prefill_only ? 1 : int(std::max<size_t>(1, (size_t(256) << 20) / wbytes + 1));
    std::vector<bf16*> ws;
    for (int c = 0; c < copies; ++c) {
      ws.push_back(static_cast<bf16*>(dalloc(wbytes)));
      fill(ws.back(), size_t(s.n) * s.k, 31 + c, -0.03f, 0.03f);
    }
    // The models' layout (matmul_tiles.h): what "ours" times; "row-major" is the same kernel on the plain weight.
    std::vector<bf16*> tiled;
    for (bf16* w : ws) tiled.push_back(tiled_copy(w, s));
    const int maxm = *std::max_element(ms.begin(), ms.end());
    bf16* x = static_cast<bf16*>(dalloc(size_t(maxm) * s.k * 2));
    fill(x, size_t(maxm) * s.k, 32, -1.f, 1.f);
    const DType ydt = s.f32 ? DType::F32 : DType::BF16;
    void* y = dalloc(size_t(maxm) * s.n * (s.f32 ? 4 : 2));
    for (int m : ms) {
      const Tensor X = view(x, DType::BF16, m, s.k, s.k), Y = view(y, ydt, m, s.n, s.n);
      auto W = [&](int i) {
        Tensor t = view(tiled[i % copies], DType::BF16, s.n, s.k, s.k);
        t.layout = Layout::MatmulTiles;
        return t;
      };
      auto W_rows = [&](int i) { return view(ws[i % copies], DType::BF16, s.n, s.k, s.k); };
      const double bytes = double(wbytes) + double(m) * s.k * 2 + double(m) * s.n * (s.f32 ? 4 : 2);
      const double flops = 2.0 * m * double(s.n) * s.k;
      const int inner = prefill_only ? 5 : 20;
      const double t_ours = time_us([&](int i) { mm.run(X, W(i), nullptr, Y, 0); }, inner);
      const double t_rows = time_us([&](int i) { mm.run(X, W_rows(i), nullptr, Y, 0); }, inner);
      const double t_lt = time_us([&](int i) { p.lt.run(X, W_rows(i), nullptr, Y, 0); }, inner);
      const double t_blas = time_us([&](int i) { blas_gemm(p.blas, X, W_rows(i), Y); }, inner);
      CK(cudaGetLastError());
      const auto ch = mm.choose(m, s.n, s.k);
      if (m == 1) {
        // As in a decode step: a small kernel before each GEMM (GEMM time = pair - small alone).
        const int nx = m * s.k;
        const double t_touch = time_us([&](int) { touch_kernel<<<1, 256>>>(x, nx, false); }, inner);
        const double t_pair = time_us([&](int i) { touch_kernel<<<1, 256>>>(x, nx, false); mm.run(X, W(i), nullptr, Y, 0); }, inner);
        const double t_pair_tr = time_us([&](int i) { touch_kernel<<<1, 256>>>(x, nx, true); mm.run(X, W(i), nullptr, Y, 0); }, inner);
        const double t_pair_lt = time_us([&](int i) { touch_kernel<<<1, 256>>>(x, nx, false); p.lt.run(X, W_rows(i), nullptr, Y, 0); }, inner);
        std::printf("| %-8s | after a small kernel (%.1f us): ours %.1f us (%.0f%%), with its early trigger %.1f us (%.0f%%), cuBLASLt %.1f us (%.0f%%) |\n",
                    s.name, t_touch, t_pair - t_touch, 100 * bytes / ((t_pair - t_touch) * 1e-6) / bw, t_pair_tr - t_touch,
                    100 * bytes / ((t_pair_tr - t_touch) * 1e-6) / bw, t_pair_lt - t_touch, 100 * bytes / ((t_pair_lt - t_touch) * 1e-6) / bw);
      }
      // The wgmma tiles forced on the tiled weight.
      const auto forced = [&](GemmTile t, bool split) {
        const Matmul::Choice f{t, split};
        return time_us([&](int i) { mm.run(X, W(i), nullptr, Y, 0, &f); }, inner);
      };
      if (prefill_only) {
        const double t128 = forced(GemmTile::Rows128, false), t192 = forced(GemmTile::Rows192, false);
        std::printf("| %-8s | %4d | %-4s | %7.1f us | %6.1f | %6.1f | %6.1f | %6.1f | %6.1f | %6.1f | ours/Lt %.2f |\n",
                    s.name, m, tile_name(ch.tile), t_ours, flops / t_ours / 1e6, flops / t_rows / 1e6,
                    flops / t128 / 1e6, flops / t192 / 1e6, flops / t_lt / 1e6, flops / t_blas / 1e6, t_lt / t_ours);
      } else {
        // (Rows192 never splits.)
        const double t128 = forced(GemmTile::Rows128, false), t128s = forced(GemmTile::Rows128, true),
                     t192 = forced(GemmTile::Rows192, false);
        std::printf("| %-8s | %4d | %-9s | %7.1f | %4.0f%% | %7.1f | %4.0f%% | %7.1f | %4.0f%% | %7.1f | %4.0f%% | "
                    "r128 %7.1f split %7.1f | r192 %7.1f |\n",
                    s.name, m, (std::string(tile_name(ch.tile)) + (ch.split ? "/split" : "")).c_str(), t_ours,
                    100 * bytes / (t_ours * 1e-6) / bw, t_rows, 100 * bytes / (t_rows * 1e-6) / bw, t_lt,
                    100 * bytes / (t_lt * 1e-6) / bw, t_blas, 100 * bytes / (t_blas * 1e-6) / bw, t128, t128s, t192);
        if (m == 1 || m == 16) {
          const int idx = m == 1 ? 0 : 1;
          const std::string nm = s.name;
          if (nm == "qkv" || nm == "o" || nm == "gate_up" || nm == "down") {
            layer_us[idx] += t_ours;
            if (idx == 0) layer_bytes += bytes;
          }
          if (nm == "lm_head") {
            head_us[idx] = t_ours;
            if (idx == 0) head_bytes = bytes;
          }
        }
      }
      std::fflush(stdout);
    }
    for (bf16* w : ws) CK(cudaFree(w));
    for (bf16* w : tiled) CK(cudaFree(w));
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
  if (!prefill_only) {
    for (int idx = 0; idx < 2; ++idx) {
      const double us = 36 * layer_us[idx] + head_us[idx];
      const double floor_us = (36 * layer_bytes + head_bytes) / bw * 1e6;
      std::printf("Qwen3-8B GEMMs of one step at M=%d: %.0f us, floor (M=1 bytes) %.0f us: %.3f of floor\n",
                  idx ? 16 : 1, us, floor_us, floor_us / us);
    }
  }
}

// Tiled copies of a random s.n x s.k weight (seeds seed, seed + 1, ...),
// enough of them (256 MB in all) that calls rotating through them never find
// their weight in L2.
std::vector<bf16*> tiled_copies(const Shape& s, int seed) {
  const size_t wbytes = size_t(s.n) * s.k * 2;
  const int copies = int(std::max<size_t>(1, (size_t(256) << 20) / wbytes + 1));
  std::vector<bf16*> tiled;
  for (int c = 0; c < copies; ++c) {
    bf16* w = static_cast<bf16*>(dalloc(wbytes));
    fill(w, size_t(s.n) * s.k, seed + c, -0.03f, 0.03f);
    tiled.push_back(tiled_copy(w, s));
    CK(cudaDeviceSynchronize());
    CK(cudaFree(w));
  }
  return tiled;
}

// Each of `choices` forced at each of `rows` per shape, in three interleaved
// rounds (the GPU's clock drifts over a long run), the fastest round kept,
// us; then what choose() picks and its time over the fastest of `choices`
// (worst and summed over the calls whose pick is among them).
void compare_choices(Matmul& mm, const char* title, const std::vector<Matmul::Choice>& choices,
                     const std::vector<int>& rows, int seed) {
  const auto name = [](const Matmul::Choice& c) { return std::string(tile_name(c.tile)) + (c.split ? "/split" : ""); };
  std::printf("## %s: us, best of 3 interleaved rounds:", title);
  for (const auto& c : choices) std::printf(" %s |", name(c).c_str());
  std::printf(" chosen | chosen / best | best\n");
  const size_t n = choices.size();
  const int maxm = *std::max_element(rows.begin(), rows.end());
  double worst = 1, sum_chosen = 0, sum_best = 0;
  for (const Shape& s : kShapes) {
    const std::vector<bf16*> tiled = tiled_copies(s, seed);
    const int copies = int(tiled.size());
    bf16* x = static_cast<bf16*>(dalloc(size_t(maxm) * s.k * 2));
    fill(x, size_t(maxm) * s.k, seed - 1, -1.f, 1.f);
    const DType ydt = s.f32 ? DType::F32 : DType::BF16;
    void* y = dalloc(size_t(maxm) * s.n * (s.f32 ? 4 : 2));
    for (int m : rows) {
      const Tensor X = view(x, DType::BF16, m, s.k, s.k), Y = view(y, ydt, m, s.n, s.n);
      const auto W = [&](int i) {
        Tensor t = view(tiled[i % copies], DType::BF16, s.n, s.k, s.k);
        t.layout = Layout::MatmulTiles;
        return t;
      };
      // About 300 us a sample (a call at 350 TFLOP/s or at 4 TB/s of weight,
      // whichever is longer), at least one call.
      const double est = std::max(2.0 * m * double(s.n) * s.k / 350e12, double(s.n) * s.k * 2 / 4e12);
      const int inner = std::max(1, int(300e-6 / est));
      std::vector<double> t(n, 1e30);
      for (int round = 0; round < 3; ++round)
        for (size_t c = 0; c < n; ++c)
          t[c] = std::min(t[c], time_us([&](int i) { mm.run(X, W(i), nullptr, Y, 0, &choices[c]); }, inner, 5));
      const auto ch = mm.choose(m, s.n, s.k);
      const size_t best = size_t(std::min_element(t.begin(), t.end()) - t.begin());
      size_t ci = n;
      for (size_t c = 0; c < n; ++c)
        if (choices[c].tile == ch.tile && choices[c].split == ch.split) ci = c;
      if (ci < n) {
        worst = std::max(worst, t[ci] / t[best]);
        sum_chosen += t[ci];
        sum_best += t[best];
      }
      std::printf("| %-8s | %4d |", s.name, m);
      for (double v : t) std::printf(" %8.1f |", v);
      std::printf(" %-10s | %s | %s |\n", name(ch).c_str(),
                  ci < n ? std::to_string(t[ci] / t[best]).substr(0, 5).c_str() : "-", name(choices[best]).c_str());
      std::fflush(stdout);
    }
    for (bf16* w : tiled) CK(cudaFree(w));
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
  std::printf("chosen over best: worst %.3f, sum %.3f\n", worst, sum_chosen / sum_best);
}

// ---- tiles: the wgmma tiles (128 rows, split or not; 192 rows, which never
// splits) at verify and prefill row counts.
void tiles(Matmul& mm) {
  compare_choices(mm, "tiles", {{GemmTile::Rows128, false}, {GemmTile::Rows128, true}, {GemmTile::Rows192, false}},
                  {96, 128, 160, 192, 256, 320, 384, 512, 768, 1024, 1536, 2048}, 61);
}

// ---- small: every tile but Rows192, split or not, at the row counts of
// decode and of verify calls of 1-8 sequences (1-128 rows).
void small(Matmul& mm) {
  std::vector<Matmul::Choice> choices;
  for (GemmTile t : {GemmTile::Rows16, GemmTile::Rows32, GemmTile::Rows64, GemmTile::Rows128})
    for (bool split : {false, true}) choices.push_back({t, split});
  compare_choices(mm, "small", choices, {1, 4, 8, 16, 24, 32, 40, 48, 64, 80, 96, 128}, 71);
}

// ---- sweep: Rows16 at 1 and 16 rows with 1, 2, 4, 8 slices (the slice
// length is otherwise fixed per shape), to check gemm_slice's choice.
void sweep(Matmul& mm, double bw) {
  std::printf("## slices sweep (Rows16, us); cluster capacity: 2 -> %d, 4 -> %d, 8 -> %d; chosen slice per shape in []\n",
              gemm_split_capacity(2), gemm_split_capacity(4), gemm_split_capacity(8));
  for (const Shape& s : kShapes) {
    if (std::string(s.name) == "lm_head") continue;
    const size_t wbytes = size_t(s.n) * s.k * 2;
    const std::vector<bf16*> ws = tiled_copies(s, 51);  // tiled, as the models hold them
    const int copies = int(ws.size());
    bf16* x = static_cast<bf16*>(dalloc(size_t(16) * s.k * 2));
    fill(x, size_t(16) * s.k, 52, -1.f, 1.f);
    void* y = dalloc(size_t(16) * s.n * 4);
    for (int m : {1, 16}) {
      std::printf("| %-8s | %2d [%5d] |", s.name, m, mm.slice(s.n, s.k));
      for (int ns : {1, 2, 4, 8}) {
        GemmArgs a;
        a.x = x;
        a.y = y;
        a.ldx = s.k;
        a.ldw = matmul_tiles_k(s.k);
        a.w_tiles = true;
        a.ldy = s.n;
        a.m = m;
        a.n = s.n;
        a.k = s.k;
        a.slice = (s.k / ns + 63) / 64 * 64;
        a.y_f32 = s.f32;
        a.split = ns > 1;
        const double t = time_us([&](int i) {
          a.w = ws[i % copies];
          launch_gemm(GemmTile::Rows16, a, 0);
        });
        std::printf(" ns %d: %6.1f (%3.0f%%) |", ns, t, 100.0 * wbytes / (t * 1e-6) / bw);
      }
      std::printf("\n");
    }
    for (bf16* w : ws) CK(cudaFree(w));
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
}

// ---- profile: a few calls between cudaProfilerStart/Stop, for ncu --profile-from-start off.
void profile(Matmul& mm) {
  struct P {
    int shape, m;
  };
  const P ps[] = {{1, 1}, {2, 1}, {3, 16}, {4, 1}, {1, 2048}, {4, 2048}, {1, 128}, {2, 128}, {2, 512}};
  for (const P& p : ps) {
    const Shape& s = kShapes[p.shape];
    bf16* x = static_cast<bf16*>(dalloc(size_t(p.m) * s.k * 2));
    bf16* w = static_cast<bf16*>(dalloc(size_t(s.n) * s.k * 2));
    void* y = dalloc(size_t(p.m) * s.n * 4);
    fill(x, size_t(p.m) * s.k, 41, -1.f, 1.f);
    fill(w, size_t(s.n) * s.k, 42, -0.03f, 0.03f);
    bf16* t = tiled_copy(w, s);  // the models' layout
    Tensor W = view(t, DType::BF16, s.n, s.k, s.k);
    W.layout = Layout::MatmulTiles;
    const Tensor X = view(x, DType::BF16, p.m, s.k, s.k), Y = view(y, s.f32 ? DType::F32 : DType::BF16, p.m, s.n, s.n);
    for (int i = 0; i < 3; ++i) mm.run(X, W, nullptr, Y, 0);
    CK(cudaDeviceSynchronize());
    CK(cudaProfilerStart());
    mm.run(X, W, nullptr, Y, 0);
    CK(cudaDeviceSynchronize());
    CK(cudaProfilerStop());
    std::printf("profiled %s m=%d\n", s.name, p.m);
    for (void* q : {static_cast<void*>(x), static_cast<void*>(w), static_cast<void*>(t), y}) CK(cudaFree(q));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string what;
  for (int i = 1; i < argc; ++i) what += std::string(argv[i]) + " ";
  if (what.empty()) what = "check invariance bench prefill";
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  try {
    Matmul mm;
    if (what.find("profile") != std::string::npos) profile(mm);
    if (what.find("check") != std::string::npos) check(mm);
    if (what.find("invariance") != std::string::npos) invariance(mm);
    if (what.find("tiles") != std::string::npos) tiles(mm);
    if (what.find("small") != std::string::npos) small(mm);
    if (what.find("bench") != std::string::npos || what.find("prefill") != std::string::npos ||
        what.find("sweep") != std::string::npos) {
      Peers peers;
      const double bw = measure_copy_bandwidth();
      std::printf("# device-to-device copy %.0f GB/s (read + write)\n", bw / 1e9);
      if (what.find("sweep") != std::string::npos) sweep(mm, bw);
      if (what.find("bench") != std::string::npos) bench(mm, peers, bw, false);
      if (what.find("prefill") != std::string::npos) bench(mm, peers, bw, true);
    }
  } catch (const std::exception& e) {
    std::printf("exception: %s\n", e.what());
    return 1;
  }
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
