#include "shipped_models.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/generation_config.h"
#include "io/model_config.h"
#include "ops/backend_factory.h"

namespace flashdraft::engine::testing {

std::filesystem::path models_dir() { return std::filesystem::path(FD_SOURCE_DIR) / "models"; }

ShippedModels& shipped(const std::string& device) {
  static std::map<std::string, ShippedModels*> loaded;
  ShippedModels*& m = loaded[device];
  if (!m) {
    auto* s = new ShippedModels;
    const auto dir = models_dir() / "target";
    s->target = model::Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir), {},
                                        ops::make_backend(device));
    s->tokenizer = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(dir));
    for (int64_t id : io::load_generation_config(dir).eos_token_ids) s->eos.push_back(static_cast<int32_t>(id));
    s->full = model::DFlashDrafter::load(models_dir() / "drafter-full", *s->target);
    s->swa = model::DFlashDrafter::load(models_dir() / "drafter-swa", *s->target);
    s->full_fp8 = model::DFlashDrafter::load(models_dir() / "drafter-full", *s->target, {}, ops::WeightQuant::Fp8);
    m = s;
  }
  return *m;
}

const std::vector<Prompt>& humaneval_prompts() {
  static const std::vector<Prompt> prompts = [] {
    std::vector<Prompt> out;
    std::ifstream in(FD_FIXTURES_DIR "/engine/humaneval.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto j = nlohmann::json::parse(line);
      out.push_back({j.at("task_id"), shipped().tokenizer->encode(j.at("prompt").get<std::string>(), false)});
    }
    return out;
  }();
  return prompts;
}

int64_t humaneval_pool(int64_t running, int new_tokens) {
  size_t longest = 0;
  for (const auto& p : humaneval_prompts()) longest = std::max(longest, p.ids.size());
  return running * static_cast<int64_t>((longest + new_tokens + 16 + 15) / 16);
}

RunResult run_all(model::DFlashDrafter* drafter, const EngineConfig& config, const std::vector<Prompt>& prompts,
                  const SamplingParams& params, ShippedModels* models) {
  ShippedModels& m = models ? *models : shipped();
  EngineConfig c = config;
  c.eos_token_ids = m.eos;
  Engine engine(*m.target, drafter, c);
  std::vector<RequestId> ids;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SamplingParams p = params;
    if (p.seed) *p.seed += i;
    ids.push_back(engine.add(prompts[i].ids, p));
  }
  while (engine.has_work()) engine.step();
  RunResult r;
  for (RequestId id : ids) {
    RequestResult res = engine.result(id);
    r.tokens.push_back(res.tokens);
    r.request_preemptions.push_back(res.preemptions);
  }
  r.stats = engine.stats();
  r.preemptions = engine.preemptions();
  r.recording_steps = engine.recording_steps();
  r.steps = engine.steps();
  r.followed_steps = engine.followed_steps();
  return r;
}

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  return p;
}

}  // namespace flashdraft::engine::testing
