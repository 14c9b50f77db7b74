// Every op of ops::Backend on every non-reference backend present, against the
// CPU fp32 reference on the same inputs (llama.cpp's test-backend-ops as
// GoogleTest): one ctest entry per case of op_cases.h's table, named
// CudaBf16/BackendOps.MatchesCpuReference/<case>.
//
// Inputs are fresh random each run (FD_BACKEND_OPS_SEED=<seed> repeats one;
// a failure prints its seed). Outputs start as NaN, so an element the op never
// writes fails, and KV-pool slots no sequence owns hold NaN, so reading one
// poisons the result. Without a GPU, or built without CUDA, the CUDA cases are
// reported SKIPPED with the reason, never passed.
//
// FD_BACKEND_OPS_SELF=1 adds CpuSelf/...: the CPU backend against itself,
// bound 0 (checks the harness: identical code on identical inputs).
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "op_cases.h"
#ifdef FD_BACKEND_OPS_CUDA
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/device.h"
#endif

namespace flashdraft::ops::testing {
namespace {

struct Param {
  std::string target;  // "cuda" or "cpu"
  OpCase c;
};

Backend& reference() {
  static const std::unique_ptr<Backend> cpu = make_cpu_backend();
  return *cpu;
}

// The backend under test, or null with `why` it is not here.
Backend* under_test(const std::string& target, std::string& why) {
  if (target == "cpu") {
    static const std::unique_ptr<Backend> cpu = make_cpu_backend();  // a second instance: nothing shared
    return cpu.get();
  }
#ifdef FD_BACKEND_OPS_CUDA
  if (cuda::device_count() == 0) {
    why = "no CUDA device on this machine";
    return nullptr;
  }
  // A GPU is here: failing to make the backend is a failure (the throw fails the test), not a skip.
  static const std::unique_ptr<Backend> gpu = cuda::make_cuda_backend();
  return gpu.get();
#else
  why = "built without CUDA (FLASHDRAFT_HAVE_CUDA off)";
  return nullptr;
#endif
}

uint64_t fresh_seed() {
  if (const char* s = std::getenv("FD_BACKEND_OPS_SEED")) return std::strtoull(s, nullptr, 0);
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

struct Diff {
  double nmse = 0.0;      // over the whole output
  double row_nmse = 0.0;  // of the worst row
  int64_t worst_row = -1;
  int64_t bad = 0;         // non-finite where the reference is finite, or a NaN sentinel overwritten
  int64_t first_bad = -1;  // element index
  int64_t ref_nan = 0;     // NaN in the reference outside sentinel outputs: the reference's own failure
  int64_t worst = -1;      // element with the largest |got - ref|
};

double nmse(double num, double den) { return num == 0.0 ? 0.0 : den == 0.0 ? INFINITY : num / den; }

// The bound holds for the whole output and for each row on its own: rows can
// differ in scale by orders of magnitude (an attention row over one key vs one
// over 32k), and a row whose values are small must not hide in the total.
Diff compare(const Output& got, const Output& ref) {
  Diff d;
  double num = 0.0, den = 0.0, worst = -1.0;
  for (int64_t row = 0; row < ref.rows; ++row) {
    double row_num = 0.0, row_den = 0.0;
    for (int64_t i = row * ref.cols; i < (row + 1) * ref.cols; ++i) {
      const double r = ref.f32[i], g = got.f32[i];
      if (std::isnan(r)) {
        if (!ref.nan_sentinels) {
          ++d.ref_nan;
        } else if (!std::isnan(g) && d.bad++ == 0) {
          d.first_bad = i;
        }
        continue;
      }
      if (!std::isfinite(g)) {
        if (d.bad++ == 0) d.first_bad = i;
        continue;
      }
      row_num += (g - r) * (g - r);
      row_den += r * r;
      if (std::abs(g - r) > worst) {
        worst = std::abs(g - r);
        d.worst = i;
      }
    }
    num += row_num;
    den += row_den;
    if (nmse(row_num, row_den) > d.row_nmse || d.worst_row < 0) {
      d.row_nmse = nmse(row_num, row_den);
      d.worst_row = row;
    }
  }
  d.nmse = nmse(num, den);
  return d;
}

std::string where(const Output& o, int64_t i) {
  return o.name + "[" + std::to_string(i / o.cols) + ", " + std::to_string(i % o.cols) + "]";
}

// Test names already say which case; gtest would otherwise print the bytes.
void PrintTo(const Param& p, std::ostream* os) { *os << p.target << " " << p.c.name; }

class BackendOps : public ::testing::TestWithParam<Param> {};

TEST_P(BackendOps, MatchesCpuReference) {
  const OpCase& c = GetParam().c;
  std::string why;
  Backend* backend = under_test(GetParam().target, why);
  if (backend == nullptr) GTEST_SKIP() << why;
  ASSERT_EQ(backend->activation_dtype(), c.dtype) << backend->describe();

  const uint64_t seed = fresh_seed();
  // Printed up front too: a failure by exception unwinds the trace below before gtest reports it.
  std::printf("[ seed     ] %" PRIu64 "\n", seed);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (FD_BACKEND_OPS_SEED=" + std::to_string(seed) +
               " repeats this run), backend " + backend->describe());
  const auto data = make_case_data(c, seed);
  std::vector<Output> ref, got;
  {  // one case's tensors alive at a time: the logits weight is 2.5 GB in f32
    auto bound = bind_case(c, *data, reference());
    bound->run();
    ref = bound->outputs();
  }
  {
    auto bound = bind_case(c, *data, *backend);
    bound->run();
    got = bound->outputs();
  }
  ASSERT_EQ(got.size(), ref.size());

  for (size_t o = 0; o < ref.size(); ++o) {
    const Output &r = ref[o], &g = got[o];
    ASSERT_EQ(g.rows * g.cols, r.rows * r.cols) << r.name;
    if (r.is_i32) {  // argmax: exact
      int64_t wrong = 0, first = -1;
      for (size_t i = 0; i < r.i32.size(); ++i)
        if (g.i32[i] != r.i32[i] && wrong++ == 0) first = static_cast<int64_t>(i);
      std::printf("[ error    ] %s %s: %" PRId64 " of %zu differ\n", c.name.c_str(), r.name.c_str(), wrong,
                  r.i32.size());
      EXPECT_EQ(wrong, 0) << r.name << ": first at row " << first << ": " << g.i32[first] << ", reference "
                          << r.i32[first];
      continue;
    }
    const Diff d = compare(g, r);
    std::printf("[ error    ] %s %s: nmse %.3g, worst row %.3g (bound %.3g)\n", c.name.c_str(), r.name.c_str(), d.nmse,
                d.row_nmse, c.max_nmse);
    EXPECT_EQ(d.ref_nan, 0) << "the reference left NaN in " << r.name << " (harness or CPU backend bug)";
    EXPECT_EQ(d.bad, 0) << d.bad << " bad elements, first "
                        << (d.first_bad < 0 ? std::string("-")
                                            : where(r, d.first_bad) + " = " + std::to_string(g.f32[d.first_bad]) +
                                                  ", reference " + std::to_string(r.f32[d.first_bad]))
                        << (r.nan_sentinels ? " (NaN marks pool slots the op must not write)"
                                            : " (NaN: never written, or an unowned KV slot was read)");
    EXPECT_LE(d.nmse, c.max_nmse) << r.name << ": normalised MSE " << d.nmse << " over bound " << c.max_nmse;
    EXPECT_LE(d.row_nmse, c.max_nmse) << r.name << ": row " << d.worst_row << "'s normalised MSE " << d.row_nmse
                                      << " over bound " << c.max_nmse << "; largest difference at "
                                      << (d.worst < 0 ? std::string("-")
                                                      : where(r, d.worst) + ": " + std::to_string(g.f32[d.worst]) +
                                                            " vs reference " + std::to_string(r.f32[d.worst]));
  }
}

std::vector<Param> params(const std::string& target, DType dtype) {
  std::vector<Param> v;
  for (OpCase& c : op_cases(dtype)) v.push_back(Param{target, std::move(c)});
  return v;
}

std::vector<Param> self_params() {
  const char* self = std::getenv("FD_BACKEND_OPS_SELF");
  return self && *self && std::string(self) != "0" ? params("cpu", DType::F32) : std::vector<Param>{};
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) { return info.param.c.name; }

INSTANTIATE_TEST_SUITE_P(CudaBf16, BackendOps, ::testing::ValuesIn(params("cuda", DType::BF16)), case_name);
INSTANTIATE_TEST_SUITE_P(CpuSelf, BackendOps, ::testing::ValuesIn(self_params()), case_name);

// The table itself: every op of the interface and every mask kind has a case.
TEST(BackendOpsTable, CoversEveryOpAndMaskKind) {
  std::set<Op> ops;
  std::set<MaskKind> masks;
  for (const OpCase& c : op_cases(DType::BF16)) {
    ops.insert(c.op);
    masks.insert(c.mask);
    EXPECT_GE(c.max_nmse, 0.0) << c.name;
  }
  EXPECT_EQ(ops.size(), static_cast<size_t>(Op::CarryForward) + 1);  // CarryForward: the enum's last
  EXPECT_EQ(masks.size(), static_cast<size_t>(MaskKind::BidirectionalWindow) + 1);  // None + every kind
}

// A weight prepared for the CUDA matmul is tiled: matmul reads it, nothing
// else may (slicing it, or handing it to another op, is a clear error rather
// than a read of scrambled rows).
TEST(BackendOpsTable, TiledWeightIsForMatmulOnly) {
  std::string why;
  Backend* be = under_test("cuda", why);
  if (be == nullptr) GTEST_SKIP() << why;
  OwnedTensor w = be->alloc_tensor(DType::BF16, 300, 256);
  be->fill_uniform(w.t, 1, -0.05f, 0.05f);
  be->prepare_matmul_weight(w);
  ASSERT_EQ(w.t.layout, Layout::MatmulTiles);
  EXPECT_EQ(w.t.rows, 300);
  EXPECT_EQ(w.t.cols, 256);
  EXPECT_THROW(w.t.row_slice(0, 128), Error);
  EXPECT_THROW(w.t.col_slice(0, 64), Error);
  OwnedTensor y = be->alloc_tensor(DType::BF16, 300, 256);
  EXPECT_THROW(be->copy(w.t, y.t), Error);
  OwnedTensor x = be->alloc_tensor(DType::BF16, 2, 256), out = be->alloc_tensor(DType::F32, 2, 300);
  be->fill_uniform(x.t, 2, -1.0f, 1.0f);
  be->matmul(x.t, w.t, nullptr, out.t);
  be->synchronize();
}

// The attention metadata helper: tables shuffled, padding entries on a spare block.
TEST(BackendOpsTable, AttnBatchOwnsDistinctBlocks) {
  const HostAttnBatch b = make_attn_batch({{37, 1}, {0, 16}, {100, 200}}, 16, 5);
  EXPECT_EQ(b.n_rows, 217);
  EXPECT_EQ(b.max_keys, 300);
  EXPECT_EQ(b.q_start, (std::vector<int32_t>{0, 1, 17, 217}));
  std::set<int64_t> slots;
  for (size_t s = 0; s < b.seqs.size(); ++s)
    for (int64_t p = 0; p < b.seqs[s].context + b.seqs[s].rows; ++p) {
      EXPECT_TRUE(slots.insert(b.slot(s, p)).second) << "slot shared at seq " << s << " pos " << p;
      EXPECT_LT(b.slot(s, p), b.num_slots());
    }
  for (size_t r = 0; r < b.slots.size(); ++r) EXPECT_TRUE(slots.count(b.slots[r])) << r;
  // Every row's padding entry is a block nobody owns.
  for (size_t s = 0; s < b.seqs.size(); ++s) {
    const int32_t pad = b.block_tables[s * b.max_blocks + b.max_blocks - 1];
    EXPECT_FALSE(slots.count(int64_t{pad} * b.block_size)) << s;
  }
}

}  // namespace
}  // namespace flashdraft::ops::testing
