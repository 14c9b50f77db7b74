// Step times of a real-size target (and its DFlash drafter) on one backend,
// with random weights of the configs' exact shapes (--load-format dummy), as
// ratios to the memory floor measured in the same run:
//   floor = (weight bytes + KV bytes the step reads) / device-to-device copy bandwidth
// Rows: decode (1 row per request), verify (16 rows per request, causal),
// draft (the drafter's 16-row block pass + the context write of 16 rows),
// prefill (one 2048-token chunk, TFLOP/s), at each batch size and context.
// Times are medians of host-timed steps (each ends in a synchronize): launch
// gaps included, which CUDA graphs (the next issue) will hide.
//
// Usage: bench_step [--device cuda] [--target DIR] [--drafter DIR] [--contexts 1024,16384]
//                   [--batches 1] [--reps 20] [--profile-decode] [--prefill-only]
// --profile-decode: after warm-up, one batch-1 decode step at the first context
// between cudaProfilerStart/Stop, for `ncu --profile-from-start off` (the sum
// of its kernel times is the step without launch gaps).
// --prefill-only: the prefill row alone (for a kernel timeline of it).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_args.h"
#include "io/model_config.h"
#include "model/dflash_drafter.h"
#include "model/qwen3_model.h"
#include "ops/backend_factory.h"
#include "step_floor.h"
#ifdef FLASHDRAFT_HAVE_CUDA
#include <cuda_profiler_api.h>
#endif

namespace {

using namespace flashdraft;
using Clock = std::chrono::steady_clock;

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cuda";
  std::filesystem::path target_dir = "../shared/configs/qwen3-8b", drafter_dir = "../shared/configs/qwen3-8b-dflash-b16";
  std::vector<int64_t> contexts = {1024, 16384}, batches = {1};
  int reps = 20;
  bool profile = false;
  const bool flags_ok = bench::parse_flags(
      "bench_step", argc, argv,
      [&](const std::string& k, const std::string& v) {
        if (k == "--profile-decode") profile = true;
        else if (k == "--prefill-only") contexts.clear();
        else if (k == "--device") device = v;
        else if (k == "--target") target_dir = v;
        else if (k == "--drafter") drafter_dir = v;
        else if (k == "--contexts") contexts = bench::parse_list(v);
        else if (k == "--batches") batches = bench::parse_list(v);
        else if (k == "--reps") reps = std::stoi(v);
        else return false;
        return true;
      },
      {"--profile-decode", "--prefill-only"});
  if (!flags_ok) return 2;
  auto backend = ops::make_backend(device);
  ops::Backend& be = *backend;
  const auto cfg = io::load_model_config(target_dir);
  auto t0 = Clock::now();
  auto target = model::Qwen3Model::load_dummy(cfg, backend);
  auto drafter = model::DFlashDrafter::load_dummy(drafter_dir, *target);
  target->set_tap_layers(drafter->config().target_layer_ids);
  std::printf("# %s; target %s + drafter %s, random weights made in %.1f s\n", be.describe().c_str(),
              target_dir.c_str(), drafter_dir.c_str(), std::chrono::duration<double>(Clock::now() - t0).count());
  const double bw = bench::copy_bandwidth(be);
  const int64_t es = static_cast<int64_t>(ops::dtype_size(be.weight_dtype()));
  const double wbytes = static_cast<double>(bench::weight_bytes(cfg, es));
  const int64_t L = cfg.num_hidden_layers;
  std::printf("# copy bandwidth %.0f GB/s; target weights %.2f GB: floor of a weight pass %.3f ms\n", bw / 1e9,
              wbytes / 1e9, wbytes / bw * 1e3);
  std::printf("%-8s %6s %6s %10s %10s %8s %s\n", "step", "batch", "ctx", "ms", "floor ms", "floor/ms", "note");

  constexpr int64_t kBlock = 16, kRows = 16;
  std::mt19937 gen(1);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(cfg.vocab_size - 1));
  auto layers = target->kv_layers();
  for (const auto& l : drafter->kv_layers()) layers.push_back(l);
  for (int64_t ctx : contexts)
    for (int64_t batch : batches) {
      const int64_t per_seq = (ctx + kRows + kBlock - 1) / kBlock;
      model::KVPool pool(be, batch * per_seq, kBlock, layers);
      std::vector<std::vector<int32_t>> tables(static_cast<size_t>(batch));
      for (int64_t b = 0; b < per_seq; ++b)  // interleaved, as a busy engine hands blocks out
        for (int64_t s = 0; s < batch; ++s) tables[s].push_back(static_cast<int32_t>(b * batch + s));
      // Context: prefilled in chunks (K/V and drafter context), outside the timing.
      for (int64_t s = 0; s < batch; ++s)
        for (int64_t p = 0; p < ctx; p += 2048) {
          const int64_t n = std::min<int64_t>(2048, ctx - p);
          std::vector<int32_t> ids(static_cast<size_t>(n));
          for (auto& t : ids) t = tok(gen);
          model::BatchContext b{{model::SeqSlice{0, n, p, tables[s], false}}};
          target->run_batch(ids, b, pool);
          drafter->write_context(target->taps_tensor(), b, pool, L);
        }
      const auto step_of = [&](int64_t rows, bool all) {
        model::BatchContext b;
        for (int64_t s = 0; s < batch; ++s) b.seqs.push_back(model::SeqSlice{s * rows, rows, ctx, tables[s], all});
        return b;
      };
      const double floor_ms = (wbytes + bench::kv_bytes(cfg, batch, ctx, es)) / bw * 1e3;
      std::vector<int32_t> ids1(static_cast<size_t>(batch)), ids16(static_cast<size_t>(batch * kRows)), drafts;
      for (auto& t : ids1) t = tok(gen);
      for (auto& t : ids16) t = tok(gen);
      const auto b1 = step_of(1, true), b16 = step_of(kRows, true);
      if (profile) {
        for (int i = 0; i < 3; ++i) target->run_batch(ids1, b1, pool);
        be.synchronize();
#ifdef FLASHDRAFT_HAVE_CUDA
        cudaProfilerStart();
#endif
        target->run_batch(ids1, b1, pool);
        be.synchronize();
#ifdef FLASHDRAFT_HAVE_CUDA
        cudaProfilerStop();
#endif
        return 0;
      }
      const double decode = bench::median_ms(be, reps, [&] { target->run_batch(ids1, b1, pool); });
      const double verify = bench::median_ms(be, reps, [&] { target->run_batch(ids16, b16, pool); });
      std::vector<int32_t> anchors(static_cast<size_t>(batch), 7);
      const double draft = bench::median_ms(be, reps, [&] {
        drafter->run(anchors, b16, pool, L);
        drafter->write_context(target->taps_tensor(), b16, pool, L);
      });
      std::printf("%-8s %6lld %6lld %10.3f %10.3f %8.3f\n", "decode", static_cast<long long>(batch),
                  static_cast<long long>(ctx), decode, floor_ms, floor_ms / decode);
      std::printf("%-8s %6lld %6lld %10.3f %10.3f %8.3f verify/decode %.3f\n", "verify16", static_cast<long long>(batch),
                  static_cast<long long>(ctx), verify, floor_ms, floor_ms / verify, verify / decode);
      std::printf("%-8s %6lld %6lld %10.3f %10s %8s (draft+verify)/decode %.3f\n", "draft16", static_cast<long long>(batch),
                  static_cast<long long>(ctx), draft, "-", "-", (draft + verify) / decode);
    }

  // Prefill: one 2048-token chunk of a fresh request.
  {
    const int64_t n = 2048;
    model::KVPool pool(be, n / kBlock, kBlock, layers);
    std::vector<int32_t> table(static_cast<size_t>(n / kBlock));
    std::iota(table.begin(), table.end(), 0);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& t : ids) t = tok(gen);
    model::BatchContext b{{model::SeqSlice{0, n, 0, table, false}}};
    const double ms = bench::median_ms(be, std::max(3, reps / 4), [&] { target->run_batch(ids, b, pool); });
    // Every weight meets every row, except the head (the last row only).
    const double head = static_cast<double>(cfg.vocab_size * cfg.hidden_size);
    const double params = wbytes / es - head;
    const double attn = 2.0 * 2.0 * L * cfg.num_attention_heads * cfg.head_dim * (n * (n + 1) / 2.0);
    const double flops = 2.0 * params * n + 2.0 * head + attn;
    std::printf("%-8s %6d %6lld %10.3f %10s %8s %.0f TFLOP/s\n", "prefill", 1, static_cast<long long>(n), ms, "-", "-",
                flops / (ms * 1e-3) / 1e12);
  }
  return 0;
}
