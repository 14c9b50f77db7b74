#include "engine/llm_engine.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "engine/acceptance.h"

namespace flashdraft::engine {
namespace {

bool contains(std::span<const int32_t> ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t resolve_k(const model::DFlashDrafter* drafter, int64_t requested) {
  if (!drafter) {
    if (requested > 0) {
      throw Error(fmt::format("num_speculative_tokens {} needs a draft model (none loaded)", requested));
    }
    return 0;
  }
  const int64_t max_k = drafter->config().block_size - 1;
  if (requested < 0) return max_k;
  if (requested > max_k) {
    throw Error(
        fmt::format("num_speculative_tokens {} exceeds what the drafter can propose: its block_size is {}, "
                    "so at most {} draft tokens per step",
                    requested, drafter->config().block_size, max_k));
  }
  return requested;
}

}  // namespace

Engine::Engine(model::Qwen3Model& target, model::DFlashDrafter* drafter, const EngineConfig& config)
    : target_(target), config_(config) {
  if (config.num_speculative_tokens < -1) {
    throw Error(fmt::format("num_speculative_tokens must be >= 0, got {}", config.num_speculative_tokens));
  }
  k_ = resolve_k(drafter, config.num_speculative_tokens);
  if (config.num_kv_blocks < 0 || config.kv_block_size <= 0 || config.max_running < 1) {
    throw Error(fmt::format("engine: needs kv_block_size >= 1, num_kv_blocks >= 0 and max_running >= 1, got {}, {}, {}",
                            config.kv_block_size, config.num_kv_blocks, config.max_running));
  }
  context_limit_ = target.config().max_position_embeddings;
  if (config_.num_kv_blocks == 0) {
    const int64_t per_request = (context_limit_ + 1 + k_ + config.kv_block_size - 1) / config.kv_block_size;
    config_.num_kv_blocks = per_request * config.max_running;
  }
  blocks_ = std::make_unique<BlockManager>(config_.num_kv_blocks, config.kv_block_size);
  SchedulerConfig sc;
  sc.max_running = config.max_running;
  sc.max_tokens_per_step = config.max_tokens_per_step;
  sc.spec_rows = 1 + k_;
  scheduler_ = std::make_unique<Scheduler>(sc, *blocks_);
  runner_ = std::make_unique<ModelRunner>(target, drafter, config_.num_kv_blocks, config.kv_block_size);
}

RequestId Engine::add(std::vector<int32_t> prompt, const SamplingParams& params, TokenSink on_token) {
  if (prompt.empty()) throw Error("the prompt has no tokens; the model needs at least one to continue from");
  if (static_cast<int64_t>(prompt.size()) >= context_limit_) {
    throw Error(
        fmt::format("the prompt has {} tokens but the model's context holds {} (max_position_embeddings); "
                    "no room left to generate",
                    prompt.size(), context_limit_));
  }
  const int32_t vocab = static_cast<int32_t>(target_.config().vocab_size);
  for (int32_t id : prompt) {
    if (id < 0 || id >= vocab) throw Error(fmt::format("prompt token {} is outside the vocabulary [0, {})", id, vocab));
  }
  const RequestId id = next_id_++;
  Tracked t;
  t.max_tokens = params.max_tokens;
  // Output never goes past the context, so the scheduler need not reserve
  // blocks beyond it.
  SamplingParams capped = params;
  capped.max_tokens =
      static_cast<int>(std::min<int64_t>(params.max_tokens, context_limit_ - static_cast<int64_t>(prompt.size())));
  t.request = std::make_unique<Request>(id, std::move(prompt), capped);
  t.sink = std::move(on_token);
  t.added = Clock::now();
  if (params.max_tokens <= 0) {
    t.request->state = RequestState::Finished;
    t.request->finish_reason = FinishReason::Length;
    t.first_token = t.finished = t.added;
    finished_at_add_.push_back(id);
  } else {
    scheduler_->add(*t.request);
  }
  requests_.emplace(id, std::move(t));
  return id;
}

bool Engine::has_work() const { return scheduler_->has_work() || !finished_at_add_.empty(); }

size_t Engine::keep_until_stop(Tracked& t, std::span<const int32_t> candidates, bool* stopped) {
  const Request& r = *t.request;
  const SamplingParams& p = r.params;
  *stopped = true;
  for (size_t j = 0; j < candidates.size(); ++j) {
    const int32_t token = candidates[j];
    const auto emitted = static_cast<int64_t>(r.output.size() + j + 1);
    const auto tokens = r.num_tokens() + static_cast<int64_t>(j + 1);
    if ((!p.ignore_eos && contains(config_.eos_token_ids, token)) || contains(p.stop_token_ids, token)) {
      t.reason = StopReason::kEos;
      return j + 1;
    }
    if (t.sink && !t.sink(token)) {
      t.reason = StopReason::kStopString;
      return j + 1;
    }
    if (emitted >= t.max_tokens) {
      t.reason = StopReason::kMaxTokens;
      return j + 1;
    }
    // Prompt plus output may fill the context, but the last token is never run.
    if (tokens >= context_limit_) {
      t.reason = StopReason::kContextFull;
      return j + 1;
    }
  }
  *stopped = false;
  return candidates.size();
}

std::vector<StepOutput> Engine::step() {
  std::vector<StepOutput> out;
  for (RequestId id : finished_at_add_) out.push_back({id, {}, true, StopReason::kMaxTokens});
  finished_at_add_.clear();

  StepPlan plan = scheduler_->schedule();
  if (plan.empty()) return out;
  ++steps_;
  runner_->run(plan, *blocks_);

  const size_t n = plan.entries.size();
  std::vector<int64_t> keep(n, 0);
  std::vector<Request*> stopped_requests;
  const int64_t vocab = runner_->vocab();
  for (size_t i = 0; i < n; ++i) {
    const ScheduledRequest& e = plan.entries[i];
    Request& r = *e.request;
    Tracked& t = requests_.at(r.id);
    std::vector<int32_t> candidates;
    if (e.kind == ScheduledRequest::Kind::Prefill) {
      if (!e.last_chunk) {
        r.on_prefill(e.rows, std::nullopt);
        keep[i] = e.rows;
        continue;
      }
      candidates.push_back(r.sampler.sample(runner_->logits(i)));
    } else {
      const auto drafts = runner_->drafts(i);
      const Acceptance a = accept(runner_->logits(i), vocab, drafts, r.sampler);
      if (!drafts.empty()) {
        stats_.record(static_cast<int64_t>(drafts.size()), a.accepted);
        r.spec.record(static_cast<int64_t>(drafts.size()), a.accepted);
        t.accepted.push_back(a.accepted);
      }
      candidates.assign(drafts.begin(), drafts.begin() + a.accepted);
      candidates.push_back(a.bonus);
    }
    bool stopped = false;
    const size_t kept = keep_until_stop(t, candidates, &stopped);
    std::span<const int32_t> emitted(candidates.data(), kept);
    if (r.output.empty()) t.first_token = Clock::now();
    if (e.kind == ScheduledRequest::Kind::Prefill) {
      r.on_prefill(e.rows, emitted[0]);
      keep[i] = e.rows;
    } else {
      r.on_decode(emitted);
      keep[i] = static_cast<int64_t>(kept);  // the anchor and the accepted drafts kept
    }
    if (stopped) {
      keep[i] = 0;  // no later step reads this request's context
      stopped_requests.push_back(&r);
    }
    out.push_back({r.id, std::vector<int32_t>(emitted.begin(), emitted.end()), stopped, t.reason});
  }
  runner_->write_context(plan, keep, *blocks_);
  for (Request* r : stopped_requests) {
    Tracked& t = requests_.at(r->id);
    t.finished = Clock::now();
    const bool length = t.reason == StopReason::kMaxTokens || t.reason == StopReason::kContextFull;
    scheduler_->finish(*r, length ? FinishReason::Length : FinishReason::Stop);
  }
  return out;
}

RequestResult Engine::result(RequestId id) const {
  auto it = requests_.find(id);
  if (it == requests_.end()) throw Error(fmt::format("no request with id {}", id));
  const Tracked& t = it->second;
  const Request& r = *t.request;
  RequestResult res;
  res.tokens = r.output;
  res.reason = t.reason;
  res.finished = r.state == RequestState::Finished;
  res.prompt_tokens = static_cast<int64_t>(r.prompt.size());
  if (!r.output.empty()) res.prefill_seconds = seconds(t.first_token - t.added);
  if (res.finished && r.output.size() > 1) res.decode_seconds = seconds(t.finished - t.first_token);
  res.spec = r.spec;
  res.accepted = t.accepted;
  res.preemptions = r.preemptions;
  return res;
}

}  // namespace flashdraft::engine
