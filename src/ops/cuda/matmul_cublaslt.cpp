#include "ops/cuda/matmul_cublaslt.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "ops/cuda/checks.h"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLASLt error in ") + what + ": " + cublasLtGetStatusString(status));
}

// cuBLASLt assumes 256-byte aligned operands unless told otherwise; views
// into fused buffers (a column slice, a row offset) are often less aligned,
// so each plan is chosen for the alignment its pointers actually have.
uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

cudaDataType_t lt_type(DType dtype) { return dtype == DType::F32 ? CUDA_R_32F : CUDA_R_16BF; }

// Everything the descriptors and the heuristic's choice depend on. Pointers
// matter only through their alignment (and the bias through whether the
// epilogue adds it), so one plan serves every layer of the same shape.
struct Key {
  int64_t n, in, out, ldx, ldw, ldy;
  uint32_t align_x, align_w, align_y, align_bias;
  int32_t y_dtype;
  int32_t bias;  // -1: none, else the bias dtype
  bool operator==(const Key& o) const { return std::memcmp(this, &o, sizeof(Key)) == 0; }
};
static_assert(sizeof(Key) == 72, "Key is hashed and compared as bytes: no padding");

struct KeyHash {
  size_t operator()(const Key& k) const {
    // FNV-1a over the bytes.
    const auto* p = reinterpret_cast<const unsigned char*>(&k);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < sizeof(Key); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool bias_epilogue = false;  // else a separate add_bias pass

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// Bounds the cache when a serving run sees many distinct prefill lengths; a
// plan costs one heuristic query (tens of microseconds) to rebuild.
constexpr size_t kMaxPlans = 4096;

}  // namespace

struct CublasLtMatmul::Impl {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  std::unordered_map<Key, std::unique_ptr<Plan>, KeyHash> plans;

  ~Impl() {
    plans.clear();
    if (workspace) cudaFree(workspace);
    if (handle) cublasLtDestroy(handle);
  }

  // Row-major y[n, out] = x[n, in] · w[out, in]^T is, read column-major,
  // Y^T[out, n] = W[out, in] · X^T[in, n], where w's memory is the
  // column-major [in, out] matrix (so A is it transposed) and x's memory is
  // the column-major X^T [in, n] as is. No data moves; only the roles swap.
  // With `fixed`, the plan uses that algorithm (if cuBLASLt accepts it for
  // these layouts) instead of asking the heuristic.
  std::unique_ptr<Plan> make_plan(const Key& k, const void* bias_ptr, bool try_epilogue,
                                  const cublasLtMatmulAlgo_t* fixed = nullptr, bool allow_split_k = false) {
    auto plan = std::make_unique<Plan>();
    check_lt(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)),
             "set TRANSA");
    check_lt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)),
             "set TRANSB");
    if (try_epilogue) {
      const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
      const int32_t bias_type = lt_type(static_cast<DType>(k.bias));  // the same as y's
      check_lt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
               "set EPILOGUE");
      check_lt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                              sizeof(bias_type)),
               "set BIAS_DATA_TYPE");
      // The heuristic reads the bias pointer's alignment.
      check_lt(
          cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)),
          "set BIAS_POINTER");
      plan->bias_epilogue = true;
    }
    check_lt(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, k.in, k.out, k.ldw), "layout A (w)");
    check_lt(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, k.in, k.n, k.ldx), "layout B (x)");
    check_lt(cublasLtMatrixLayoutCreate(&plan->d, lt_type(static_cast<DType>(k.y_dtype)), k.out, k.n, k.ldy),
             "layout D (y)");

    cublasLtMatmulPreference_t pref = nullptr;
    check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, const auto& value, const char* what) {
      const cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value));
      if (s != CUBLAS_STATUS_SUCCESS) cublasLtMatmulPreferenceDestroy(pref);
      check_lt(s, what);
    };
    const uint64_t ws = workspace_bytes;
    set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws, "set MAX_WORKSPACE_BYTES");
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, k.align_w, "set MIN_ALIGNMENT_A");
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, k.align_x, "set MIN_ALIGNMENT_B");
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, k.align_y, "set MIN_ALIGNMENT_C");
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, k.align_y, "set MIN_ALIGNMENT_D");
    if (fixed) {
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatmulHeuristicResult_t checked{};
      if (cublasLtMatmulAlgoCheck(handle, plan->desc, plan->a, plan->b, plan->d, plan->d, fixed, &checked) !=
              CUBLAS_STATUS_SUCCESS ||
          checked.workspaceSize > workspace_bytes)
        return nullptr;
      plan->algo = *fixed;
      return plan;
    }
    // Batch invariance: the algorithm chosen here serves every row count, so
    // split-K (whose partial sums depend on the grid) is ruled out; among the
    // heuristic's candidates the first without it wins.
    constexpr int kCandidates = 16;
    cublasLtMatmulHeuristicResult_t results[kCandidates]{};
    int found = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                                            pref, kCandidates, results, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && found == 0)) return nullptr;
    check_lt(s, "cublasLtMatmulAlgoGetHeuristic");
    for (int i = 0; i < found; ++i) {
      int32_t splits = 1;
      size_t written = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&results[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof(splits),
                                           &written);
      if (splits <= 1 || allow_split_k) {
        plan->algo = results[i].algo;
        return plan;
      }
    }
    return nullptr;
  }

  // One algorithm per weight shape, chosen once at kReferenceRows rows and
  // used for every row count: the same kernel with the same reduction order
  // over `in` computes each output element, so a row's result is bit-identical
  // whatever else shares the call. Greedy DFlash equals plain decoding only
  // with this (a 16-row verify and a 1-row decode must agree exactly).
  static constexpr int64_t kReferenceRows = 32;
  std::unordered_map<Key, cublasLtMatmulAlgo_t, KeyHash> algos;

  static Key algo_key(const Key& k) {
    Key a = k;
    a.n = 0;
    a.ldx = 0;
    a.ldy = 0;
    return a;
  }

  const cublasLtMatmulAlgo_t* algo_for(const Key& k, const void* bias_ptr, bool epilogue) {
    const Key a = algo_key(k);
    auto it = algos.find(a);
    if (it != algos.end()) return &it->second;
    // For small row counts the heuristic may offer only split-K kernels: then
    // the reference grows until one without split-K comes up.
    for (int64_t rows : {kReferenceRows, 8 * kReferenceRows, 64 * kReferenceRows}) {
      Key ref = k;
      ref.n = rows;
      ref.ldx = std::max<int64_t>(k.ldx, k.in);
      ref.ldy = std::max<int64_t>(k.ldy, k.out);
      if (std::unique_ptr<Plan> plan = make_plan(ref, bias_ptr, epilogue))
        return &algos.emplace(a, plan->algo).first->second;
    }
    return nullptr;
  }

  const Plan& plan_for(const Key& k, const void* bias_ptr) {
    auto it = plans.find(k);
    if (it != plans.end()) return *it->second;
    // The epilogue's bias has y's dtype; other pairs (a bf16 bias on f32
    // logits), or an epilogue the heuristic refuses, add the bias separately.
    const bool epilogue = k.bias >= 0 && k.bias == k.y_dtype;
    std::unique_ptr<Plan> plan;
    if (epilogue)
      if (const auto* algo = algo_for(k, bias_ptr, true)) plan = make_plan(k, bias_ptr, true, algo);
    if (!plan)
      if (const auto* algo = algo_for(k, nullptr, false)) plan = make_plan(k, nullptr, false, algo);
    // The shared algorithm refuses this row count (too large for it): the
    // heuristic's own choice, and rows of this size lose batch invariance.
    if (!plan && epilogue) plan = make_plan(k, bias_ptr, true, nullptr, /*allow_split_k=*/true);
    if (!plan) plan = make_plan(k, nullptr, false, nullptr, /*allow_split_k=*/true);
    if (!plan)
      throw Error("cuBLASLt has no algorithm for matmul " + std::to_string(k.n) + "x" + std::to_string(k.in) + " · (" +
                  std::to_string(k.out) + "x" + std::to_string(k.in) + ")^T -> " +
                  dtype_name(static_cast<DType>(k.y_dtype)));
    if (plans.size() >= kMaxPlans) plans.clear();
    return *plans.emplace(k, std::move(plan)).first->second;
  }
};

CublasLtMatmul::CublasLtMatmul(size_t workspace_bytes) : impl_(std::make_unique<Impl>()) {
  check_lt(cublasLtCreate(&impl_->handle), "cublasLtCreate");
  check(cudaMalloc(&impl_->workspace, workspace_bytes), "cudaMalloc (cuBLASLt workspace)");
  impl_->workspace_bytes = workspace_bytes;
}

CublasLtMatmul::~CublasLtMatmul() = default;

void CublasLtMatmul::run(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, cudaStream_t stream) {
  expect_tensor(x, DType::BF16, "matmul", "x");
  expect_tensor(w, DType::BF16, "matmul", "w");
  expect_tensor(y, DType::BF16, DType::F32, "matmul", "y");
  expect_shape(y, x.rows, w.rows, "matmul", "y");
  if (w.cols != x.cols) fail("matmul", "x is " + describe(x) + " but w is " + describe(w) + " (in must match)");
  if (bias) {
    expect_tensor(*bias, DType::BF16, DType::F32, "matmul", "bias");
    expect_shape(*bias, 1, w.rows, "matmul", "bias");
  }
  if (y.empty()) return;
  if (overlaps(x, y)) fail("matmul", "y must not alias x");
  if (x.cols == 0) fail("matmul", "in = 0 (nothing to multiply)");

  Key k{};
  k.n = x.rows;
  k.in = x.cols;
  k.out = w.rows;
  k.ldx = row_pitch(x);
  k.ldw = row_pitch(w);
  k.ldy = row_pitch(y);
  k.y_dtype = static_cast<int32_t>(y.dtype);
  k.bias = bias ? static_cast<int32_t>(bias->dtype) : -1;
  k.align_x = alignment(x.data);
  k.align_w = alignment(w.data);
  k.align_y = alignment(y.data);
  k.align_bias = bias ? alignment(bias->data) : 0;
  const Plan& plan = impl_->plan_for(k, bias ? bias->data : nullptr);

  if (plan.bias_epilogue) {
    const void* p = bias->data;
    check_lt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof(p)),
             "set BIAS_POINTER");
  }
  const float alpha = 1.f, beta = 0.f;
  check_lt(cublasLtMatmul(impl_->handle, plan.desc, &alpha, w.data, plan.a, x.data, plan.b, &beta, y.data, plan.d,
                          y.data, plan.d, &plan.algo, impl_->workspace, impl_->workspace_bytes, stream),
           "cublasLtMatmul");
  if (bias && !plan.bias_epilogue) add_bias(y, *bias, stream);
}

}  // namespace flashdraft::ops::cuda
