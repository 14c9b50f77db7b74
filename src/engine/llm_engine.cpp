#include "engine/llm_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "engine/penalty_step.h"

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
  reach_ = drafter && k_ > 0 ? std::max<int64_t>(1 + k_, drafter->config().block_size) : 1 + k_;
  if (config.num_kv_blocks < 0 || config.kv_block_size <= 0 || config.max_running < 1) {
    throw Error(fmt::format("engine: needs kv_block_size >= 1, num_kv_blocks >= 0 and max_running >= 1, got {}, {}, {}",
                            config.kv_block_size, config.num_kv_blocks, config.max_running));
  }
  context_limit_ = target.config().max_position_embeddings;
  if (config.max_model_len < 0 || config.max_model_len > context_limit_) {
    throw Error(fmt::format("max_model_len {}: must be in [1, {}] (the model's max_position_embeddings; 0 = that)",
                            config.max_model_len, context_limit_));
  }
  if (config.max_model_len > 0) context_limit_ = config.max_model_len;
  if (config_.num_kv_blocks == 0) {
    const int64_t per_request = (context_limit_ + reach_ + config.kv_block_size - 1) / config.kv_block_size;
    config_.num_kv_blocks = per_request * config.max_running;
  }
  blocks_ = std::make_unique<BlockManager>(config_.num_kv_blocks, config.kv_block_size);
  SchedulerConfig sc;
  sc.max_running = config.max_running;
  sc.max_tokens_per_step = config.max_tokens_per_step;
  sc.spec_rows = 1 + k_;
  sc.reach_rows = reach_;
  scheduler_ = std::make_unique<Scheduler>(sc, *blocks_);
  RunnerOptions ro;
  ro.enforce_eager = config.enforce_eager;
  ro.max_seqs = config.max_running;
  ro.max_rows = config.max_tokens_per_step;
  ro.max_keys = context_limit_ + reach_;
  ro.spec_rows = 1 + k_;
  overlap_ = config.overlap_scheduling.value_or(target.backend().supports_graphs()) && !target.shard().active();
  ro.overlap = overlap_;
  ro.pending_bytes = config.pending_context_bytes;
  ro.catch_up_bytes = config.catch_up_bytes;
  runner_ = std::make_unique<ModelRunner>(target, drafter, config_.num_kv_blocks, config.kv_block_size, ro);
  // Before calibrating: the step costs are those of recorded steps.
  graphs_ = runner_->capture_graphs();
  if (drafter && k_ > 0) {
    acceptance_ = std::make_unique<AcceptanceEstimate>(k_);
    if (config.step_costs) {
      costs_ = std::make_unique<StepCostModel>(*config.step_costs, /*learn=*/false);
      calibrated_ = true;
    } else {
      costs_ = std::make_unique<StepCostModel>();
      // Fixed-length engines calibrate when a request first asks for adaptive.
      if (config.adaptive_speculation) calibrate_costs();
    }
  }
}

void Engine::calibrate_costs() {
  calibrated_ = true;
  CalibrationLimits limits;
  limits.max_drafts = k_;
  limits.draft_block = reach_;
  limits.max_seqs = config_.max_running;
  limits.max_rows = config_.max_tokens_per_step;
  limits.context_limit = context_limit_;
  calibration_ = calibrate_step_costs(*runner_, *blocks_, limits, *costs_);
}

void Engine::choose_draft_rows(std::span<ScheduledRequest> decodes) {
  candidates_.resize(decodes.size());
  bool any_adaptive = false;
  for (size_t i = 0; i < decodes.size(); ++i) {
    const Request& r = *decodes[i].request;
    DraftCandidate& c = candidates_[i];
    c.context = decodes[i].pos0;
    c.draft_block = reach_;
    c.fixed = !r.params.adaptive_speculation.value_or(config_.adaptive_speculation);
    if (c.fixed) {
      c.max_drafts = k_;
    } else {
      // Drafts past the request's last token (max_tokens, the context) could
      // never be committed.
      const int64_t left = std::min<int64_t>(r.params.max_tokens - static_cast<int64_t>(r.output.size()),
                                             context_limit_ - r.num_tokens());
      c.max_drafts = std::clamp<int64_t>(left - 1, 0, k_);
      any_adaptive = true;
    }
    c.accept.resize(static_cast<size_t>(c.max_drafts));
    acceptance_->cumulative(r.id, c.accept);
  }
  if (!any_adaptive) return;  // every entry keeps spec_rows
  if (!calibrated_) calibrate_costs();
  DraftOptions options;
  options.one_length = runner_->graphs_enabled();
  if (options.one_length) options.lengths = runner_->graph_draft_lengths();
  const std::vector<int64_t> k = choose_draft_lengths(candidates_, *costs_, options);
  for (size_t i = 0; i < decodes.size(); ++i) decodes[i].rows = 1 + k[i];
}

RequestId Engine::add(std::vector<int32_t> prompt, const SamplingParams& params, TokenSink on_token) {
  if (prompt.empty()) throw Error("the prompt has no tokens; the model needs at least one to continue from");
  if (static_cast<int64_t>(prompt.size()) >= context_limit_) {
    throw Error(
        fmt::format("the prompt has {} tokens but the model's context holds {} ({}); no room left to generate",
                    prompt.size(), context_limit_,
                    config_.max_model_len > 0 ? "max_model_len" : "max_position_embeddings"));
  }
  const int32_t vocab = static_cast<int32_t>(target_.config().vocab_size);
  for (int32_t id : prompt) {
    if (id < 0 || id >= vocab) throw Error(fmt::format("prompt token {} is outside the vocabulary [0, {})", id, vocab));
  }
  for (const auto& [token, bias] : params.logit_bias) {
    if (token < 0 || token >= vocab) {
      throw Error(fmt::format("logit_bias: token {} is outside the vocabulary [0, {})", token, vocab));
    }
  }
  const RequestId id = next_id_;
  // Output never goes past the context, so the scheduler need not reserve
  // blocks beyond it.
  SamplingParams capped = params;
  capped.max_tokens =
      static_cast<int>(std::min<int64_t>(params.max_tokens, context_limit_ - static_cast<int64_t>(prompt.size())));
  auto r = std::make_unique<Request>(id, std::move(prompt), capped);
  r->max_tokens_asked = params.max_tokens;
  r->sink = std::move(on_token);
  r->added = std::chrono::steady_clock::now();
  if (params.max_tokens <= 0) {
    r->state = RequestState::Finished;
    r->finish_reason = FinishReason::Length;
    r->stop = StopReason::kMaxTokens;
    r->first_token = r->finished_at = r->added;
    unreported_.push_back(id);
  } else {
    scheduler_->add(*r);
  }
  ++next_id_;
  requests_.emplace(id, std::move(r));
  return id;
}

bool Engine::has_work() const {
  return scheduler_->has_work() || flight_.has_value() || !unreported_.empty() || !deferred_.empty();
}

size_t Engine::keep_until_stop(Request& r, std::span<const int32_t> candidates, bool* stopped) {
  const SamplingParams& p = r.params;
  *stopped = true;
  for (size_t j = 0; j < candidates.size(); ++j) {
    const int32_t token = candidates[j];
    const auto emitted = static_cast<int64_t>(r.output.size() + j + 1);
    const auto tokens = r.num_tokens() + static_cast<int64_t>(j + 1);
    if ((!p.ignore_eos && contains(config_.eos_token_ids, token)) || contains(p.stop_token_ids, token)) {
      r.stop = StopReason::kEos;
      return j + 1;
    }
    if (r.sink && !r.sink(token)) {
      r.stop = StopReason::kStopString;
      return j + 1;
    }
    if (emitted >= r.max_tokens_asked) {
      r.stop = StopReason::kMaxTokens;
      return j + 1;
    }
    // Prompt plus output may fill the context, but the last token is never run.
    if (tokens >= context_limit_) {
      r.stop = StopReason::kContextFull;
      return j + 1;
    }
  }
  *stopped = false;
  return candidates.size();
}

bool Engine::abort(RequestId id) { return finish_outside_step(id, FinishReason::Abort); }

bool Engine::fail(RequestId id) { return finish_outside_step(id, FinishReason::Error); }

bool Engine::finish_outside_step(RequestId id, FinishReason reason) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->state == RequestState::Finished) return false;
  if (in_step_ || in_flight(id)) {
    // The step's plan (or the one in flight) still points at the request and its blocks.
    deferred_.emplace_back(id, reason);
    return true;
  }
  Request& r = *it->second;
  scheduler_->finish(r, reason);
  if (acceptance_) acceptance_->forget(id);
  runner_->forget(id);
  r.finished_at = std::chrono::steady_clock::now();
  unreported_.push_back(id);
  return true;
}

void Engine::apply_deferred() {
  // A request may also have stopped in the step that deferred it: no-op then.
  for (const auto& [id, reason] : std::exchange(deferred_, {})) finish_outside_step(id, reason);
}

std::vector<StepOutput> Engine::step() {
  std::vector<StepOutput> out;
  if (!flight_) apply_deferred();  // left behind by a step that threw
  report_unreported(out);
  if (!overlap_) {
    std::optional<Flight> f = plan_step();
    if (!f) return out;
    runner_->run(f->plan, *blocks_, [this] {
      if (costs_) costs_->refit_if_due();
    });
    complete(*f, nullptr, out);
    apply_deferred();
    report_unreported(out);
    return out;
  }
  // Overlapped: one step in flight between calls. The next is launched
  // behind it before its results are read where it can be (plan_follower),
  // else after them; either way the backend has work while the host reads
  // this step's results and the caller handles them.
  std::optional<Flight> next;
  try {
    if (!flight_) {
      flight_ = plan_step();
      if (!flight_) return out;
      runner_->launch(flight_->plan, *blocks_);
    }
    next = plan_follower(flight_->plan);
    if (next) {
      runner_->launch(next->plan, *blocks_, &flight_->plan);
      ++followed_steps_;
    }
    if (costs_) costs_->refit_if_due();
    runner_->finish();
    // The step behind starts on the backend as this one's results land.
    if (next) next->started = std::chrono::steady_clock::now();
    Flight done = std::move(*flight_);
    flight_ = std::move(next);
    complete(done, flight_ ? &flight_->plan : nullptr, out);
    if (flight_ && std::all_of(flight_->plan.entries.begin(), flight_->plan.entries.end(),
                               [](const ScheduledRequest& e) { return e.request->state == RequestState::Finished; })) {
      // Everyone in the step behind stopped before it: nothing of it is
      // kept, and waiting for it now gives their blocks back with the
      // step that reports them finished.
      runner_->finish();
      flight_.reset();
      for (RequestId id : std::exchange(free_after_, {})) blocks_->free(id);
    }
    apply_deferred();
    report_unreported(out);
    if (!flight_) {
      flight_ = plan_step();
      if (flight_) runner_->launch(flight_->plan, *blocks_);
    }
  } catch (...) {
    // Whatever was launched is dropped; its requests keep the state of the
    // last step read (the caller fails them, as after any step that threw).
    runner_->abandon();
    flight_.reset();
    for (RequestId id : std::exchange(free_after_, {})) blocks_->free(id);
    retired_.clear();
    throw;
  }
  return out;
}

void Engine::report_unreported(std::vector<StepOutput>& out) {
  // One output per request and step: an abort from inside this step marks
  // the request's token output finished rather than adding a second one.
  for (RequestId id : unreported_) {
    const Request& r = *requests_.at(id);
    auto it = std::find_if(out.begin(), out.end(), [id](const StepOutput& o) { return o.id == id; });
    if (it == out.end()) it = out.insert(out.end(), StepOutput{id, {}, false, {}, {}, {}});
    it->finished = true;
    it->reason = *r.finish_reason;
    it->stop = r.stop;
  }
  unreported_.clear();
}

std::optional<Engine::Flight> Engine::plan_step() {
  const auto started = std::chrono::steady_clock::now();
  StepPlan plan = acceptance_ ? scheduler_->schedule([this](std::span<ScheduledRequest> decodes) {
    choose_draft_rows(decodes);
  })
                              : scheduler_->schedule();
  if (plan.empty()) return std::nullopt;
  return Flight{std::move(plan), started};
}

std::optional<Engine::Flight> Engine::plan_follower(const StepPlan& ahead) {
  // The step after `ahead`, planned before its results are read: its
  // decoding requests once more, each as if it kept all its drafts there
  // (ModelRunner::launch; the backend puts in what it kept). Only where
  // that is the step the scheduler would plan anyway, nothing needs the
  // results on the host first, and every request's worst case fits its
  // blocks; else the next step is planned after the results.
  if (!runner_->follow_ok()) return std::nullopt;
  // Every running request is in that step (none waits for a prefill chunk
  // or for its turn), and nobody waits to be admitted.
  const auto& running = scheduler_->running();
  const auto live = std::count_if(ahead.entries.begin(), ahead.entries.end(), [](const ScheduledRequest& e) {
    return e.request->state != RequestState::Finished;
  });
  if (static_cast<size_t>(live) != running.size()) return std::nullopt;
  if (!scheduler_->waiting().empty() && static_cast<int64_t>(running.size()) < config_.max_running)
    return std::nullopt;
  const auto started = std::chrono::steady_clock::now();
  const int64_t spec_rows = 1 + k_;
  StepPlan plan;
  bool exact = true;  // every position known (no drafts ahead)
  for (const ScheduledRequest& e : ahead.entries) {
    Request& r = *e.request;
    if (r.state == RequestState::Finished) continue;  // stopped before that step (its blocks go with it)
    const bool decoded = e.kind == ScheduledRequest::Kind::Decode;
    if (!decoded && !e.last_chunk) return std::nullopt;
    if (r.params.logprobs) return std::nullopt;  // read from the logits, which the next step overwrites
    exact = exact && (!decoded || e.rows == 1);
    // Requests that surely stop ahead (their last token) and those being
    // aborted are left out.
    const auto emitted = static_cast<int64_t>(r.output.size()) + 1;
    if (emitted >= r.max_tokens_asked || r.num_tokens() + 1 >= context_limit_) continue;
    if (std::any_of(deferred_.begin(), deferred_.end(), [&](const auto& d) { return d.first == r.id; })) continue;
    plan.entries.push_back({&r, ScheduledRequest::Kind::Decode, e.pos0 + e.rows, spec_rows, false});
  }
  if (plan.entries.empty() || PenaltyStep::needed(plan)) return std::nullopt;  // penalties read the history
  if (acceptance_) choose_draft_rows(plan.entries);
  int64_t rows = 0, drafting = 0, worst_keys = 0, least_keys = 0;
  for (const ScheduledRequest& e : plan.entries) {
    rows += e.rows;
    drafting += e.rows > 1;
    worst_keys = std::max(worst_keys, e.pos0 + e.rows);
    least_keys = std::max(least_keys, e.pos0 - (spec_rows - 1) + e.rows);
  }
  if (rows > config_.max_tokens_per_step) return std::nullopt;
  // Where the furthest positions reach a longer context bucket than the
  // real ones may, the step could run in a recorded step of a bucket it
  // does not need (recorded mid-run): planned after the results instead.
  if (runner_->graphs_enabled() && runner_->keys_bucket(worst_keys) != runner_->keys_bucket(least_keys))
    return std::nullopt;
  // A step in which nobody drafts books its rows' drafter context by
  // position when it is launched: only where the positions are exact.
  if (acceptance_ && drafting == 0 && !exact) return std::nullopt;
  // Blocks for the furthest each request can reach (reach_: the drafter's
  // whole block whatever the draft length), taken without preempting; last,
  // so that a step not launched takes none.
  for (const ScheduledRequest& e : plan.entries) {
    const int64_t reach = e.pos0 + reach_;
    if (reach > context_limit_ + reach_ || !blocks_->ensure(e.request->id, reach)) return std::nullopt;
  }
  plan.total_rows = rows;
  return Flight{std::move(plan), started};
}

void Engine::complete(Flight& f, const StepPlan* next, std::vector<StepOutput>& out) {
  // Blocks of requests that stopped before the step just read, which that
  // step still wrote, and results taken meanwhile are free now.
  for (RequestId id : std::exchange(free_after_, {})) blocks_->free(id);
  retired_.clear();
  ++steps_;
  struct InStep {
    bool& flag;
    explicit InStep(bool& f) : flag(f) { flag = true; }
    ~InStep() { flag = false; }
  } in_step(in_step_);
  if (runner_->last_run_recorded()) ++recording_steps_;
  StepPlan& plan = f.plan;
  const size_t n = plan.entries.size();
  std::vector<int64_t> keep(n, 0);
  std::vector<Request*> stopped_requests;
  for (size_t i = 0; i < n; ++i) {
    ScheduledRequest& e = plan.entries[i];
    Request& r = *e.request;
    // A step launched ahead of its results ran requests that stopped in the
    // step before it (nothing of theirs is kept), and planned the others'
    // positions as if all their drafts were kept: the real ones now.
    if (r.state == RequestState::Finished) continue;
    if (e.kind == ScheduledRequest::Kind::Decode) e.pos0 = r.num_computed;
    if (e.kind == ScheduledRequest::Kind::Prefill && !e.last_chunk) {
      r.on_prefill(e.rows, std::nullopt);
      keep[i] = e.rows;
      continue;
    }
    const ModelRunner::Verdict v = runner_->verdict(i);
    if (v.token < 0) {
      throw Error(fmt::format("request {}: the target's logits at position {} cannot be sampled (a NaN or +inf "
                              "logit, or every logit -inf)",
                              r.id, e.pos0 + v.accepted + (e.kind == ScheduledRequest::Kind::Decode ? 1 : e.rows)));
    }
    std::vector<int32_t> candidates;
    if (e.kind == ScheduledRequest::Kind::Decode) {
      const auto drafts = runner_->drafts(i);
      if (!drafts.empty()) {
        stats_.record(static_cast<int64_t>(drafts.size()), v.accepted);
        r.spec.record(static_cast<int64_t>(drafts.size()), v.accepted);
        r.accepted.push_back(v.accepted);
      }
      if (acceptance_) {
        const auto k = static_cast<int64_t>(drafts.size());
        stats_.record_length(k);
        r.spec.record_length(k);
        if (k > 0) {
          acceptance_->observe(r.id, k, v.accepted);
        } else {
          acceptance_->idle(r.id);
        }
      }
      candidates.assign(drafts.begin(), drafts.begin() + v.accepted);
    }
    candidates.push_back(v.token);
    bool stopped = false;
    const size_t kept = keep_until_stop(r, candidates, &stopped);
    std::span<const int32_t> emitted(candidates.data(), kept);
    if (r.output.empty()) r.first_token = std::chrono::steady_clock::now();
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
    out.push_back(
        {r.id, std::vector<int32_t>(emitted.begin(), emitted.end()), stopped, finish_reason_of(r.stop), r.stop, {}});
    if (r.params.logprobs) {
      // Row j of the entry produced emitted[j] (a prefill entry has its one row).
      const std::vector<float> rows = runner_->logits(i, static_cast<int64_t>(kept));
      const int64_t vocab = runner_->vocab();
      for (size_t j = 0; j < kept; ++j) {
        out.back().logprobs.push_back(token_logprobs(rows.data() + j * vocab, vocab, emitted[j], *r.params.logprobs));
      }
      r.logprobs.insert(r.logprobs.end(), out.back().logprobs.begin(), out.back().logprobs.end());
    }
  }
  runner_->write_context(plan, keep, *blocks_);
  if (costs_ && costs_->learning() && !runner_->last_run_recorded()) {
    StepShape shape;
    for (const ScheduledRequest& e : plan.entries) {
      if (e.kind == ScheduledRequest::Kind::Decode) {
        shape.add_decode(e.pos0, e.rows, 1 + k_);
        shape.uneven |= e.rows != plan.entries[0].rows;
      } else {
        shape.add_prefill(e.pos0, e.rows);
      }
    }
    costs_->observe(shape, seconds(std::chrono::steady_clock::now() - f.started), 1.0, /*refit_now=*/false);
  }
  for (Request* r : stopped_requests) {
    r->finished_at = std::chrono::steady_clock::now();
    // The step launched behind this one may still write its blocks.
    const bool in_next = next && std::any_of(next->entries.begin(), next->entries.end(),
                                             [r](const ScheduledRequest& e) { return e.request == r; });
    scheduler_->finish(*r, finish_reason_of(r->stop), /*free_blocks=*/!in_next);
    if (in_next) free_after_.push_back(r->id);
    if (acceptance_) acceptance_->forget(r->id);
    runner_->forget(r->id);
  }
}

RequestResult Engine::result(RequestId id) const {
  auto it = requests_.find(id);
  if (it == requests_.end()) throw Error(fmt::format("no request with id {}", id));
  const Request& r = *it->second;
  RequestResult res;
  res.id = id;
  res.tokens = r.output;
  res.finished = r.state == RequestState::Finished;
  if (res.finished) {
    res.reason = *r.finish_reason;
    res.stop = r.stop;
  }
  res.prompt_tokens = static_cast<int64_t>(r.prompt.size());
  if (!r.output.empty()) res.prefill_seconds = seconds(r.first_token - r.added);
  if (res.finished && r.output.size() > 1) res.decode_seconds = seconds(r.finished_at - r.first_token);
  res.spec = r.spec;
  res.accepted = r.accepted;
  res.logprobs = r.logprobs;
  res.preemptions = r.preemptions;
  return res;
}

bool Engine::in_flight(RequestId id) const {
  return flight_ && std::any_of(flight_->plan.entries.begin(), flight_->plan.entries.end(),
                                [id](const ScheduledRequest& e) { return e.request->id == id; });
}

std::optional<RequestResult> Engine::take_result(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->state != RequestState::Finished) return std::nullopt;
  RequestResult res = result(id);
  // The step in flight may still name it (it stopped in the step before).
  if (in_flight(id)) retired_.push_back(std::move(it->second));
  requests_.erase(it);
  std::erase(unreported_, id);  // taken: nothing left for a step to report
  return res;
}

}  // namespace flashdraft::engine
