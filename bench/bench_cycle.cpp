// A DFlash cycle against a plain decode step at real model shapes (random
// weights of the configs' exact shapes), through the engine's own ModelRunner,
// with recorded graphs and with --enforce-eager:
//   plain step = target forward over 1 row per request + sampling
//   cycle      = drafter block pass + target verify of 16 rows per request +
//                acceptance + the drafter's context write of the kept rows
// Each time is the median of host-timed steps that end in a synchronize (so
// launch gaps count), with the host's own time per step (preparing inputs
// and launching, until it waits for the GPU) beside it. Random weights give
// random drafts: this times the cycle, not the acceptance; the projected
// speedup at acceptance length tau is tau / (cycle / plain step). The plain
// step is also set against its memory floor (step_floor.h: the weights and
// the K/V it reads over the copy bandwidth measured here; with N ranks, a
// rank's share of those bytes).
//
// Usage: bench_cycle [--device cuda] --target DIR --drafter DIR [--contexts 1024,8192]
//                    [--batches 1,8,32] [--reps 30] [--block 16] [--tensor-parallel-size N]
// With --tensor-parallel-size N > 1 both models are split over N GPUs (NCCL;
// threads on --device cpu) and the runner runs eagerly (no graphs yet), so
// its graph and eager columns time the same thing; a second table times the
// all-reduces alone (their share of a step: their total / the step's time).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_args.h"
#include "engine/block_manager.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "io/model_config.h"
#include "model/dflash_drafter.h"
#include "model/qwen3_model.h"
#include "ops/backend_factory.h"
#include "parallel/communicator.h"
#include "parallel/rank_threads.h"
#include "step_floor.h"

namespace {

using namespace flashdraft;
using Clock = std::chrono::steady_clock;

struct Timing {
  double step_ms = 0, host_us = 0;
};

struct Setup {
  std::vector<int64_t> contexts, batches;
  int reps = 30;
  int64_t block = 16;
};

// Requests already decoding at `ctx` (their KV holds whatever the pool held:
// the weights are random anyway), one plan entry of `rows` rows each.
struct Batch {
  std::vector<std::unique_ptr<engine::Request>> requests;
  engine::StepPlan plan;
};

Batch make_batch(engine::BlockManager& blocks, int64_t batch, int64_t ctx, int64_t rows, int64_t vocab) {
  Batch b;
  std::mt19937 rng(static_cast<uint32_t>(ctx * 131 + batch));
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(vocab - 1));
  engine::SamplingParams params;
  params.temperature = 0;
  params.max_tokens = 1 << 20;
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<int32_t> prompt(static_cast<size_t>(ctx));
    for (auto& t : prompt) t = tok(rng);
    auto r = std::make_unique<engine::Request>(i, std::move(prompt), params);
    r->state = engine::RequestState::Decoding;
    r->output.push_back(tok(rng));
    r->num_computed = ctx;
    if (!blocks.ensure(r->id, ctx + rows)) throw std::runtime_error("bench_cycle: KV pool too small");
    b.plan.entries.push_back({r.get(), engine::ScheduledRequest::Kind::Decode, ctx, rows, false});
    b.plan.total_rows += rows;
    b.requests.push_back(std::move(r));
  }
  return b;
}

// Times plain steps (no drafter) or cycles at every (context, batch).
std::vector<Timing> time_runner(model::Qwen3Model& target, model::DFlashDrafter* drafter, const Setup& s,
                                bool eager) {
  const int64_t max_ctx = *std::max_element(s.contexts.begin(), s.contexts.end());
  const int64_t max_batch = *std::max_element(s.batches.begin(), s.batches.end());
  const int64_t rows = drafter ? s.block : 1;
  const int64_t per_seq = (max_ctx + rows + 15) / 16;
  engine::RunnerOptions o;
  o.enforce_eager = eager;
  o.max_seqs = max_batch;
  o.max_rows = max_batch * s.block;
  o.max_keys = max_ctx + s.block + 1;
  o.spec_rows = s.block;
  engine::ModelRunner runner(target, drafter, per_seq * max_batch, 16, o);
  const auto report = runner.capture_graphs();
  if (report.enabled)
    std::fprintf(stderr, "%s: recorded %lld graphs in %.2f s\n", drafter ? "dflash" : "plain",
                 static_cast<long long>(report.graphs), report.seconds);
  ops::Backend& be = target.backend();
  std::vector<Timing> out;
  for (int64_t ctx : s.contexts) {
    for (int64_t batch : s.batches) {
      engine::BlockManager blocks(per_seq * max_batch, 16);
      Batch b = make_batch(blocks, batch, ctx, rows, target.config().vocab_size);
      std::vector<int64_t> keep(static_cast<size_t>(batch));
      auto step = [&] {
        runner.run(b.plan, blocks);
        if (!drafter) return;
        for (size_t i = 0; i < keep.size(); ++i) keep[i] = runner.verdict(i).accepted + 1;
        runner.write_context(b.plan, keep, blocks);
      };
      for (int i = 0; i < 3; ++i) step();  // warm-up: the first run records the graph
      be.synchronize();
      std::vector<double> t, host;
      for (int i = 0; i < s.reps; ++i) {
        const auto t0 = Clock::now();
        step();
        be.synchronize();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        host.push_back(runner.last_host_seconds() * 1e6);
      }
      std::sort(t.begin(), t.end());
      std::sort(host.begin(), host.end());
      out.push_back({t[t.size() / 2], host[host.size() / 2]});
    }
  }
  return out;
}

// Tensor parallelism: the median time of `count` back-to-back all-reduces
// of [rows, hidden] activations over every rank (a forward does two per
// decoder layer), in ms, from one dispatch to the ranks' threads.
double all_reduce_ms(model::Qwen3Model& target, int64_t rows, int64_t count, int reps) {
  std::vector<model::Qwen3Model*> shards{&target};
  std::vector<parallel::Communicator*> comms{target.shard().comm};
  for (const auto& p : target.peers()) {
    shards.push_back(p.get());
    comms.push_back(p->shard().comm);
  }
  parallel::RankThreads ranks(comms);
  std::vector<double> ms;
  std::vector<ops::OwnedTensor> x(shards.size());
  ranks.run([&](int r) {
    ops::Backend& be = shards[static_cast<size_t>(r)]->backend();
    x[static_cast<size_t>(r)] = be.alloc_tensor(be.activation_dtype(), rows, target.config().hidden_size);
    be.fill_uniform(x[static_cast<size_t>(r)].t, 1, -1.0f, 1.0f);
    be.synchronize();
  });
  for (int i = 0; i < reps + 3; ++i) {
    const auto t0 = Clock::now();
    ranks.run([&](int r) {
      ops::Backend& be = shards[static_cast<size_t>(r)]->backend();
      for (int64_t k = 0; k < count; ++k)
        comms[static_cast<size_t>(r)]->all_reduce_sum(be, x[static_cast<size_t>(r)].t);
      be.synchronize();
    });
    if (i >= 3) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cuda", target_dir, drafter_dir;
  std::vector<std::string> quants = {"none"};
  int tp = 1;
  Setup s;
  s.contexts = {1024, 8192};
  s.batches = {1, 8, 32};
  const bool flags_ok = bench::parse_flags("bench_cycle", argc, argv, [&](const std::string& k, const std::string& v) {
    if (k == "--device") device = v;
    else if (k == "--target") target_dir = v;
    else if (k == "--drafter") drafter_dir = v;
    else if (k == "--contexts") s.contexts = bench::parse_list(v);
    else if (k == "--batches") s.batches = bench::parse_list(v);
    else if (k == "--reps") s.reps = std::stoi(v);
    else if (k == "--block") s.block = std::stoll(v);
    else if (k == "--tensor-parallel-size") tp = std::stoi(v);
    else if (k == "--draft-quantization") quants = bench::split_list(v);
    else return false;
    return true;
  });
  if (!flags_ok) return 2;
  for (const std::string& q : quants) {
    if (q != "none" && q != "fp8") {
      std::fprintf(stderr, "bench_cycle: --draft-quantization takes none and fp8, got %s\n", q.c_str());
      return 2;
    }
  }
  if (target_dir.empty() || drafter_dir.empty()) {
    std::fprintf(stderr, "usage: bench_cycle [--device cuda] --target DIR --drafter DIR [--contexts 1024,8192] "
                         "[--batches 1,8,32] [--reps 30] [--block 16] [--draft-quantization none,fp8]\n");
    return 2;
  }
  try {
    const auto cfg = io::load_model_config(target_dir);
    auto target = tp > 1 ? model::Qwen3Model::load_sharded(nullptr, cfg, ops::make_rank_backends(device, tp),
                                                           parallel::make_group(device, tp))
                         : model::Qwen3Model::load_dummy(cfg, ops::make_backend(device));
    std::printf("# bench_cycle on %s x %d ranks: target %s, drafter %s (random weights), block %lld, median of %d\n",
                target->backend().describe().c_str(), tp, target_dir.c_str(), drafter_dir.c_str(),
                static_cast<long long>(s.block), s.reps);
    ops::Backend& be = target->backend();
    const int64_t es = static_cast<int64_t>(ops::dtype_size(be.weight_dtype()));
    const double bw = bench::copy_bandwidth(be);
    const double wbytes = static_cast<double>(bench::weight_bytes(cfg, es));
    std::printf("# copy bandwidth %.0f GB/s; the target's weights %.2f GB%s\n", bw / 1e9, wbytes / 1e9,
                tp > 1 ? " (a rank reads its share)" : "");
    const auto floor_ms = [&](int64_t ctx, int64_t batch) {
      return (wbytes + bench::kv_bytes(cfg, batch, ctx, es)) / tp / bw * 1e3;
    };
    // One runner at a time: each holds a KV pool sized for the largest batch.
    const auto plain_g = time_runner(*target, nullptr, s, false);
    const auto plain_e = time_runner(*target, nullptr, s, true);
    // One table per drafter quantization (--draft-quantization none,fp8:
    // the drafter as loaded, then rounded to fp8, against the same plain steps).
    for (const std::string& quant : quants) {
      auto drafter = model::DFlashDrafter::load_dummy(
          drafter_dir, *target, 2, quant == "fp8" ? ops::WeightQuant::Fp8 : ops::WeightQuant::None);
      const auto cycle_g = time_runner(*target, drafter.get(), s, false);
      const auto cycle_e = time_runner(*target, drafter.get(), s, true);
      std::printf("\ndrafter quantization: %s\n\n", quant.c_str());
      std::printf("| ctx | batch | plain ms | floor ms | floor/plain | cycle ms | cycle/plain | x at tau 6.5 | x at tau 4 | "
                  "eager plain ms | eager cycle ms | eager cycle/plain | host us plain (graphs/eager) | host us cycle "
                  "(graphs/eager) |\n");
      std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
      size_t k = 0;
      for (int64_t ctx : s.contexts) {
        for (int64_t batch : s.batches) {
          const double ratio = cycle_g[k].step_ms / plain_g[k].step_ms, floor = floor_ms(ctx, batch);
          std::printf(
              "| %lld | %lld | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f | %.3f | %.3f | %.3f | %.0f / %.0f | %.0f "
              "/ %.0f |\n",
              static_cast<long long>(ctx), static_cast<long long>(batch), plain_g[k].step_ms, floor,
              floor / plain_g[k].step_ms, cycle_g[k].step_ms, ratio, 6.5 / ratio, 4.0 / ratio, plain_e[k].step_ms,
              cycle_e[k].step_ms,
              cycle_e[k].step_ms / plain_e[k].step_ms, plain_g[k].host_us, plain_e[k].host_us, cycle_g[k].host_us,
              cycle_e[k].host_us);
          ++k;
        }
      }
    }
    if (tp > 1) {
      // Each decoder layer sums its attention and MLP outputs over the ranks:
      // 2 x layers all-reduces of [rows, hidden] per target forward, timed
      // alone here (the drafter's few layers are left out).
      const int64_t L = target->config().num_hidden_layers;
      std::printf("\n| batch | %lld all-reduces of a plain step, ms | of a verify (%lld rows each), ms |\n|---|---|---|\n",
                  static_cast<long long>(2 * L), static_cast<long long>(s.block));
      for (int64_t batch : s.batches)
        std::printf("| %lld | %.3f | %.3f |\n", static_cast<long long>(batch),
                    all_reduce_ms(*target, batch, 2 * L, s.reps), all_reduce_ms(*target, batch * s.block, 2 * L, s.reps));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cycle: %s\n", e.what());
    return 1;
  }
  return 0;
}
