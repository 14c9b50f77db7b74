#include "serving/engine_builder.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>

#include "core/error.h"
#include "io/checkpoint.h"
#include "model/dflash_config.h"
#include "model/kv_pool.h"
#include "model/tensor_parallel.h"
#include "ops/backend_factory.h"
#include "parallel/communicator.h"
#include "serving/generation_defaults.h"
#include "serving/kv_pool_size.h"
#include "serving/load_progress.h"
#include "serving/model_dir.h"

namespace flashdraft::serving {
namespace {

// Loads through `load(progress callback)` with a bar and a final line on `log`.
template <typename Load>
auto load_logged(const io::Checkpoint& checkpoint, std::FILE* log, Load load) {
  if (!log) return load([](size_t, size_t) {});
  LoadProgress progress(log, isatty(fileno(log)) != 0);
  auto loaded = load([&](size_t done, size_t total) { progress.update(done, total); });
  progress.finish(checkpoint.total_bytes());
  return loaded;
}

// The checks that need no weights, so that build_engine fails before loading
// them. Returns the max_model_len to use.
int64_t check_limits(const EngineOptions& o, const io::ModelConfig& config) {
  const int64_t context = config.max_position_embeddings;
  if (o.max_model_len < 0 || o.max_model_len > context) {
    throw UsageError(fmt::format("--max-model-len: must be in [1, {}] (the model's max_position_embeddings), got {}",
                                 context, o.max_model_len));
  }
  if (o.max_num_seqs < 1) throw UsageError(fmt::format("--max-num-seqs: must be >= 1, got {}", o.max_num_seqs));
  if (o.max_num_batched_tokens < 1) {
    throw UsageError(fmt::format("--max-num-batched-tokens: must be >= 1, got {}", o.max_num_batched_tokens));
  }
  if (o.load_format != "auto" && o.load_format != "dummy") {
    throw UsageError(fmt::format("--load-format: expected auto or dummy, got {:?}", o.load_format));
  }
  if (o.tensor_parallel_size < 1) {
    throw UsageError(fmt::format("--tensor-parallel-size: must be >= 1, got {}", o.tensor_parallel_size));
  }
  try {
    model::check_shardable(config, o.tensor_parallel_size, "--tensor-parallel-size: the target's config.json: ",
                           /*vocab=*/true);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return o.max_model_len > 0 ? o.max_model_len : context;
}

}  // namespace

ModelFiles read_model_files(const std::filesystem::path& dir) {
  std::filesystem::path abs = require_model_dir(dir, {"config.json", "tokenizer.json"});
  io::GenerationConfig generation = io::load_generation_config(abs);
  io::ModelConfig config = io::load_model_config(abs);
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(abs);
  ModelFiles files{abs, config, generation, tok, sampling_defaults(generation), eos_token_ids(config, generation, tok),
                   std::nullopt, ""};
  if (!tok.chat_template().empty()) {
    try {
      files.chat_template = chat::ChatTemplate::parse(tok.chat_template());
    } catch (const Error& e) {
      // Only chat requests need it: they get this error, everything else works.
      files.chat_template_error = e.what();
    }
  }
  return files;
}

// load_target over o.tensor_parallel_size ranks.
std::unique_ptr<model::Qwen3Model> load_sharded_target(const ModelFiles& files, const EngineOptions& o,
                                                       std::FILE* log) {
  const int n = o.tensor_parallel_size;
  const std::string device = o.device == "auto" ? (ops::cuda_available() ? "cuda" : "cpu") : o.device;
  std::vector<std::shared_ptr<ops::Backend>> backends;
  std::vector<std::unique_ptr<parallel::Communicator>> group;
  try {
    backends = ops::make_rank_backends(device, n);
    group = parallel::make_group(device, n);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  if (log) fmt::print(log, "tensor parallel: {} ranks on {}, collectives: {}\n", n, backends[0]->describe(),
                      group[0]->describe());
  if (o.load_format == "dummy")
    return model::Qwen3Model::load_sharded(nullptr, files.config, std::move(backends), std::move(group));
  io::Checkpoint checkpoint = io::Checkpoint::open(files.dir);
  return load_logged(checkpoint, log, [&](const model::LoadProgress& progress) {
    return model::Qwen3Model::load_sharded(&checkpoint, files.config, std::move(backends), std::move(group), progress);
  });
}

std::unique_ptr<model::Qwen3Model> load_target(const ModelFiles& files, const EngineOptions& o, std::FILE* log) {
  if (o.tensor_parallel_size > 1) return load_sharded_target(files, o, log);
  std::shared_ptr<ops::Backend> backend;
  try {
    backend = ops::make_backend(o.device);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  if (o.load_format == "dummy") {
    const auto start = std::chrono::steady_clock::now();
    auto target = model::Qwen3Model::load_dummy(files.config, backend);
    if (log)
      fmt::print(log, "made random weights for {} on {} in {:.1f} s (--load-format dummy)\n", files.dir.string(),
                 backend->describe(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return target;
  }
  io::Checkpoint checkpoint = io::Checkpoint::open(files.dir);
  return load_logged(checkpoint, log, [&](const model::LoadProgress& progress) {
    return model::Qwen3Model::load(checkpoint, files.config, progress, backend);
  });
}

std::unique_ptr<model::DFlashDrafter> load_drafter(const EngineOptions& o, const model::Qwen3Model& target,
                                                   std::FILE* log) {
  const std::string& dir = o.speculative.draft_model;
  if (dir.empty()) return nullptr;
  const ops::WeightQuant quant =
      o.speculative.quantization == "fp8" ? ops::WeightQuant::Fp8 : ops::WeightQuant::None;
  if (log && quant == ops::WeightQuant::Fp8)
    std::fprintf(log, "flashdraft: the drafter's weights and its copy of the lm head are rounded to fp8 as they load\n");
  if (o.load_format == "dummy") return model::DFlashDrafter::load_dummy(dir, target, 2, quant);
  io::Checkpoint checkpoint = io::Checkpoint::open(dir);
  return load_logged(checkpoint, log, [&](const model::LoadProgress& progress) {
    return model::DFlashDrafter::load(checkpoint, model::load_drafter_model_config(dir), target, progress, quant);
  });
}

std::unique_ptr<engine::Engine> make_engine(model::Qwen3Model& target, model::DFlashDrafter* drafter,
                                            const EngineOptions& o, std::vector<int32_t> eos, std::FILE* log) {
  engine::EngineConfig c;
  c.enforce_eager = o.enforce_eager;
  if (o.disable_overlap_schedule) c.overlap_scheduling = false;
  c.max_model_len = check_limits(o, target.config());
  c.eos_token_ids = std::move(eos);
  const int64_t block = drafter ? drafter->config().block_size : 1;
  const auto& k = o.speculative.num_speculative_tokens;
  if (k && drafter && *k > block - 1) {
    throw UsageError(
        fmt::format("num_speculative_tokens {}: the drafter in {} has block_size {}, so it drafts at "
                    "most {} tokens per step",
                    *k, o.speculative.draft_model, block, block - 1));
  }
  c.num_speculative_tokens = k ? *k : -1;
  c.adaptive_speculation = o.speculative.adaptive;
  c.max_running = o.max_num_seqs;
  const int64_t step_rows = drafter ? 1 + (k ? *k : block - 1) : 1;
  if (o.max_num_batched_tokens < step_rows) {
    throw UsageError(fmt::format(
        "--max-num-batched-tokens: must be >= {} (one verify step: 1 + num_speculative_tokens), got {}", step_rows,
        o.max_num_batched_tokens));
  }
  c.max_tokens_per_step = o.max_num_batched_tokens;

  KvPoolDemand demand;
  demand.max_num_seqs = o.max_num_seqs;
  demand.positions_per_seq = o.positions_per_seq;
  demand.max_model_len = c.max_model_len;
  demand.draft_block = block;
  demand.kv_block_size = c.kv_block_size;
  demand.gpu_memory_utilization = o.gpu_memory_utilization;
  ops::Backend& be = target.backend();
  const bool gpu = be.device() == ops::Device::CUDA;
  if (gpu) {
    auto layers = target.kv_layers();
    if (drafter)
      for (const auto& l : drafter->kv_layers()) layers.push_back(l);
    demand.bytes_per_block = model::KVPool::bytes_per_block(c.kv_block_size, layers, be.activation_dtype());
    demand.budget_bytes = static_cast<int64_t>(static_cast<double>(be.free_memory()) * o.gpu_memory_utilization);
  }
  const KvPoolSize pool = size_kv_pool(demand);
  c.num_kv_blocks = pool.num_blocks;
  if (gpu && pool.capped() && log) {
    fmt::print(log,
               "flashdraft: KV cache capped at {:.2f} GiB by --gpu-memory-utilization {}: {} blocks hold {} of the "
               "{} sequences at their longest at once; the others wait\n",
               static_cast<double>(pool.bytes(demand.bytes_per_block)) / (1 << 30), o.gpu_memory_utilization,
               pool.num_blocks, pool.num_blocks / pool.blocks_per_seq, o.max_num_seqs);
  }
  auto engine = std::make_unique<engine::Engine>(target, drafter, c);
  if (log && engine->graphs().enabled) {
    const auto& g = engine->graphs();
    fmt::print(log, "graphs: recorded {} decode-step graphs (batch sizes {}..{}) in {:.2f} s (--enforce-eager: none)\n",
               g.graphs, g.batch_sizes.front(), g.batch_sizes.back(), g.seconds);
  }
  if (log && engine->step_costs() && engine->calibration().steps > 0) {
    fmt::print(log, "adaptive speculation: step costs calibrated from {} timed steps in {:.0f} ms\n",
               engine->calibration().steps, engine->calibration().seconds * 1e3);
  }
  return engine;
}

LoadedEngine build_engine(ModelFiles files, const EngineOptions& options, std::FILE* log) {
  check_limits(options, files.config);
  auto target = load_target(files, options, log);
  auto drafter = load_drafter(options, *target, log);
  auto engine = make_engine(*target, drafter.get(), options, files.eos, log);
  const int64_t max_model_len = engine->context_limit();
  return LoadedEngine{std::move(files), std::move(target), std::move(drafter), std::move(engine), max_model_len};
}

LoadedEngine build_engine(const EngineOptions& options, std::FILE* log) {
  return build_engine(read_model_files(options.model), options, log);
}

}  // namespace flashdraft::serving
