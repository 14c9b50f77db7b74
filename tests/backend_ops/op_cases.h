#pragma once
// The case table of the backend op harness (tests/backend_ops) and its perf
// mode (bench/bench_backend_ops.cpp): every op of ops::Backend at the shapes
// the models use, each case's inputs made on the host, and the case bound to
// one backend (inputs uploaded, outputs poisoned, the op ready to enqueue).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn_batch.h"
#include "ops/backend.h"

namespace flashdraft::ops::testing {

enum class Op : uint8_t {
  Embedding,
  Matmul,
  RmsNorm,
  AddRmsNorm,
  RopeStoreKv,
  MatmulRopeStoreKv,  // a layer's qkv projection and rope_store_kv in one call (fused on CUDA for <= 16 rows)
  MatmulSiluGlu,      // the gate_up projection and silu_glu in one call (likewise)
  SiluGlu,
  GatherRows,
  ScatterRows,  // a step's target taps set aside into the drafter's waiting-row store
  Softcap,
  Argmax,
  Sample,  // Backend::sample: f32 logits rows -> tokens
  Accept,  // Backend::accept: sequences of logits rows -> {accepted, bonus}
  Penalize,  // Backend::penalize: logit bias and penalties, in place, per row
  PagedAttention,
  Copy,  // f32 -> the backend's activation dtype (the residual stream out as taps)
  CarryForward,  // a step's inputs fixed up from the step before it (overlapped scheduling)
};
const char* op_name(Op op);

// The four AttentionMask kinds the models use (see ops/backend.h).
enum class MaskKind : uint8_t {
  None,                 // not an attention case
  Causal,               // the target: prefill, decode, verify
  Bidirectional,        // !causal: DFlash full_attention (all context + the whole block)
  Window,               // causal + window: DFlash sliding_attention, keys in (p - W, p]
  BidirectionalWindow,  // !causal + window: DFlash non-causal sliding layer, keys in (p - W, p + W)
};

struct OpCase {
  std::string name = {};  // unique, [a-z0-9_]: the test's name
  Op op = Op::Matmul;
  DType dtype = DType::BF16;  // weights and activations of the backend under test
  // Bound on the normalised MSE sum((out - ref)^2) / sum(ref^2) of each output,
  // and of each row of it (argmax: exact match). Per op and dtype: see
  // bf16_bound() in op_cases.cpp.
  double max_nmse = 0.0;

  // Shapes; which fields apply depends on the op (see the table in op_cases.cpp).
  int64_t n = 0;          // rows (tokens) for the row-wise ops
  int64_t dim = 0;        // row width: hidden size; matmul in; silu_glu I; vocab for softcap / argmax
  int64_t out = 0;        // matmul out
  int64_t table = 0;      // embedding vocab; gather_rows source rows; scatter_rows destination rows
  bool bias = false;      // matmul
  bool strided = false;   // x (matmul, rmsnorm) / q (attention) is a column slice of a wider buffer
  bool f32 = false;       // matmul: f32 y (logits); gather_rows: f32 source (logits);
                          // embedding: f32 out, rmsnorm: f32 x (the residual stream)
  bool in_place = false;  // rmsnorm: y is x
  bool tiled = false;     // matmul: w handed to Backend::prepare_matmul_weight, as the models' weights are
  bool fp8 = false;       // matmul*: ... with WeightQuant::Fp8 (a quantized drafter's weights), on both sides
  bool norm = true;       // (matmul_)rope_store_kv: with per-head norm weights (Qwen3) or without (Llama)
  bool ties = false;      // argmax: every row's maximum appears twice
  int64_t offset = -1;    // argmax: >= 0 runs argmax_key, x being the vocabulary shard at this offset
  bool greedy = false;    // sample / accept: every row at temperature 0 (else a mix of filters)
  float scalar = 1.0f;    // embedding scale; softcap cap; rope attention_factor
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  MaskKind mask = MaskKind::None;
  int64_t window = 0;
  std::vector<SeqRows> seqs = {};  // attention and rope_store_kv: the batch's sequences
  int32_t keys_bucket = 0;         // attention: max_keys stated this high (a recorded step's context bucket)
  int32_t block_size = 16;
};

// The table, with dtype and bounds for a backend computing in `dtype`: BF16 is
// the CUDA backend; F32 gives bound 0, for checking the CPU backend against
// itself (the harness's own smoke test).
std::vector<OpCase> op_cases(DType dtype);

// A case's inputs, made on the host in f32 and rounded to the case's dtype, so
// the reference and the backend under test start from the same values.
struct CaseData;
std::shared_ptr<const CaseData> make_case_data(const OpCase& c, uint64_t seed);

// One output of a bound case, downloaded after the op ran.
struct Output {
  std::string name;
  int64_t rows = 0, cols = 0;
  bool is_i32 = false;
  // NaN where the reference is NaN is expected (unowned KV-pool slots, which
  // must stay NaN); anywhere else a NaN is an error.
  bool nan_sentinels = false;
  std::vector<float> f32 = {};
  std::vector<int32_t> i32 = {};
};

// A case's tensors on one backend. Construction allocates, uploads the inputs
// and poisons the outputs with fill_nan; run() enqueues the op (repeatable, for
// timing; in-place ops then see their own previous output).
class BoundCase {
 public:
  virtual ~BoundCase() = default;
  virtual void run() = 0;
  // Waits for the queue and downloads every output.
  virtual std::vector<Output> outputs() = 0;
};
std::unique_ptr<BoundCase> bind_case(const OpCase& c, const CaseData& data, Backend& backend);

// Bytes one run moves to/from memory at least (inputs read once, outputs
// written once, in `backend`'s dtypes) and the flops it does (0: not counted).
struct Traffic {
  double bytes = 0.0, flops = 0.0;
};
Traffic traffic(const OpCase& c, const Backend& backend);

}  // namespace flashdraft::ops::testing
