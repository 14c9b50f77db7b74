#include "cli/engine_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <system_error>

#include "cli/load_progress.h"
#include "cli/terminal.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "ops/backend_factory.h"

namespace flashdraft::cli {
namespace {

std::filesystem::path require_drafter_dir(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(dir, ec);
  if (ec) abs = dir;
  if (!std::filesystem::is_directory(abs, ec)) {
    throw UsageError(fmt::format("{}: no such directory: {}", flag, abs.string()));
  }
  if (!std::filesystem::is_regular_file(abs / "config.json", ec)) {
    throw UsageError(fmt::format("{}: no config.json in {}", flag, abs.string()));
  }
  return abs;
}

}  // namespace

SpeculativeSetup speculative_setup(const GenerateOptions& o) {
  const bool json = o.speculative_config_option->count() > 0;
  const bool draft = o.draft_model_option->count() > 0;
  const bool k = o.num_speculative_tokens_option->count() > 0;
  if (json && (draft || k)) {
    throw UsageError(
        "--speculative-config already names the drafter and num_speculative_tokens; "
        "do not combine it with --draft-model or --num-speculative-tokens");
  }
  SpeculativeSetup setup;
  if (json) {
    setup = parse_speculative_config(o.speculative_config);
    setup.draft_model = require_drafter_dir("--speculative-config model", setup.draft_model).string();
    return setup;
  }
  if (k && !draft) throw UsageError("--num-speculative-tokens needs --draft-model DIR (the DFlash drafter)");
  if (k && o.num_speculative_tokens < 1) {
    throw UsageError(fmt::format("--num-speculative-tokens: must be >= 1, got {}", o.num_speculative_tokens));
  }
  if (draft) {
    setup.draft_model = require_drafter_dir("--draft-model", o.draft_model).string();
    if (k) setup.num_speculative_tokens = o.num_speculative_tokens;
  }
  return setup;
}

LoadedModels load_models(const std::filesystem::path& dir, const io::ModelConfig& config,
                         const SpeculativeSetup& setup, const GenerateOptions& options) {
  LoadedModels m;
  m.gpu_memory_utilization = options.gpu_memory_utilization;
  std::shared_ptr<ops::Backend> backend;
  try {
    backend = ops::make_backend(options.device);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  const bool dummy = options.load_format == "dummy";
  if (dummy) {
    const auto start = std::chrono::steady_clock::now();
    m.target = model::Qwen3Model::load_dummy(config, backend);
    fmt::print(stderr, "made random weights for {} on {} in {:.1f} s (--load-format dummy)\n", dir.string(),
               backend->describe(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } else {
    io::Checkpoint checkpoint = io::Checkpoint::open(dir);
    LoadProgress progress(stderr, stderr_is_terminal());
    m.target = model::Qwen3Model::load(
        checkpoint, config, [&](size_t done, size_t total) { progress.update(done, total); }, backend);
    progress.finish(checkpoint.total_bytes());
  }
  if (!setup.draft_model.empty()) {
    if (dummy) {
      m.drafter = model::DFlashDrafter::load_dummy(setup.draft_model, *m.target);
    } else {
      io::Checkpoint checkpoint = io::Checkpoint::open(setup.draft_model);
      LoadProgress progress(stderr, stderr_is_terminal());
      m.drafter = model::DFlashDrafter::load(checkpoint, model::load_drafter_model_config(setup.draft_model), *m.target,
                                             [&](size_t done, size_t total) { progress.update(done, total); });
      progress.finish(checkpoint.total_bytes());
    }
    const int64_t block = m.drafter->config().block_size;
    if (setup.num_speculative_tokens && *setup.num_speculative_tokens > block - 1) {
      throw UsageError(
          fmt::format("num_speculative_tokens {}: the drafter in {} has block_size {}, so it drafts at "
                      "most {} tokens per step",
                      *setup.num_speculative_tokens, setup.draft_model, block, block - 1));
    }
  }
  return m;
}

std::unique_ptr<engine::Engine> make_engine(LoadedModels& models, const SpeculativeSetup& setup, int64_t running,
                                            int64_t longest_prompt, int64_t max_tokens, std::vector<int32_t> eos) {
  engine::EngineConfig c;
  c.num_speculative_tokens = setup.num_speculative_tokens ? *setup.num_speculative_tokens : -1;
  c.max_running = running;
  c.eos_token_ids = std::move(eos);
  // Positions one request can need: its prompt and output (never past the
  // context) plus a full draft block beyond its last token.
  const int64_t limit = models.target->config().max_position_embeddings;
  const int64_t block = models.drafter ? models.drafter->config().block_size : 1;
  const int64_t positions = std::min(longest_prompt + std::max<int64_t>(max_tokens, 1), limit) + block;
  c.num_kv_blocks = running * ((positions + c.kv_block_size - 1) / c.kv_block_size);
  ops::Backend& be = models.target->backend();
  if (be.device() == ops::Device::CUDA) {
    auto layers = models.target->kv_layers();
    if (models.drafter)
      for (const auto& l : models.drafter->kv_layers()) layers.push_back(l);
    const auto per_block = model::KVPool::bytes_per_block(c.kv_block_size, layers, be.activation_dtype());
    const auto budget = static_cast<int64_t>(static_cast<double>(be.free_memory()) * models.gpu_memory_utilization);
    if (c.num_kv_blocks * per_block > budget) {
      throw UsageError(fmt::format(
          "the KV cache for {} requests of up to {} positions needs {:.2f} GiB, but --gpu-memory-utilization {} "
          "of the GPU's free memory is {:.2f} GiB: lower --concurrency or --max-tokens",
          running, positions, static_cast<double>(c.num_kv_blocks * per_block) / (1 << 30),
          models.gpu_memory_utilization, static_cast<double>(budget) / (1 << 30)));
    }
  }
  return std::make_unique<engine::Engine>(*models.target, models.drafter.get(), c);
}

}  // namespace flashdraft::cli
