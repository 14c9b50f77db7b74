#include "engine/async_engine.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

// The record of a request that never got an engine record (aborted while
// queued, rejected, or lost to a failed step).
RequestResult bare_result(FinishReason reason, int64_t prompt_tokens) {
  RequestResult r;
  r.finished = true;
  r.reason = reason;
  r.prompt_tokens = prompt_tokens;
  return r;
}

}  // namespace

std::optional<StreamItem> RequestChannel::pop(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !items_.empty() || done_; })) return std::nullopt;
  if (items_.empty()) return std::nullopt;  // done: the last item is already out
  StreamItem item = std::move(items_.front());
  items_.pop_front();
  if (item.last()) done_ = true;
  return item;
}

bool RequestChannel::finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

bool RequestChannel::done() const {
  std::lock_guard lock(mu_);
  return done_;
}

void RequestChannel::push(StreamItem item) {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;  // nothing follows the last item
    finished_ = item.last();
    items_.push_back(std::move(item));
  }
  // notify_all: several threads may wait on one request (a reader and a
  // watchdog, say).
  cv_.notify_all();
}

AsyncEngine::AsyncEngine(std::unique_ptr<Engine> engine)
    : engine_(std::move(engine)),
      num_kv_blocks_(engine_->num_kv_blocks()),
      free_kv_blocks_(engine_->free_kv_blocks()),
      thread_([this] { loop(); }) {}

AsyncEngine::~AsyncEngine() { shutdown(); }

RequestHandle AsyncEngine::submit(std::vector<int32_t> prompt, const SamplingParams& params, TokenSink on_token) {
  RequestHandle h;
  h.channel = std::make_shared<RequestChannel>();
  {
    std::lock_guard lock(mu_);
    if (stop_) throw Error("the engine is shut down; it takes no more requests");
    h.id = next_handle_++;
    incoming_.push_back({h.id, std::move(prompt), params, std::move(on_token), h.channel});
    active_.insert(h.id);
  }
  cv_.notify_one();
  return h;
}

bool AsyncEngine::abort(const RequestHandle& handle) {
  std::shared_ptr<RequestChannel> queued;
  int64_t prompt_tokens = 0;
  {
    std::lock_guard lock(mu_);
    if (!active_.contains(handle.id)) return false;
    auto it = std::find_if(incoming_.begin(), incoming_.end(), [&](const Submission& s) { return s.id == handle.id; });
    if (it == incoming_.end()) {
      aborts_.push_back(handle.id);  // in the engine: its thread aborts it
    } else {
      // Never reached the engine: nothing to free.
      queued = it->channel;
      prompt_tokens = static_cast<int64_t>(it->prompt.size());
      incoming_.erase(it);
      active_.erase(handle.id);
    }
  }
  if (queued) {
    queued->push({{}, bare_result(FinishReason::Abort, prompt_tokens), {}});
  } else {
    cv_.notify_one();
  }
  return true;
}

void AsyncEngine::shutdown() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  std::lock_guard join_lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

int64_t AsyncEngine::free_kv_blocks() const {
  std::lock_guard lock(mu_);
  return free_kv_blocks_;
}

size_t AsyncEngine::in_flight() const {
  std::lock_guard lock(mu_);
  return active_.size();
}

void AsyncEngine::loop() {
  for (;;) {
    std::vector<Submission> submissions;
    std::vector<uint64_t> aborts;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !aborts_.empty() || engine_->has_work(); });
      if (stop_) break;
      submissions.swap(incoming_);
      aborts.swap(aborts_);
    }
    admit(std::move(submissions));
    for (uint64_t handle : aborts) {
      std::optional<RequestId> id;
      {
        std::lock_guard lock(mu_);
        if (auto it = engine_ids_.find(handle); it != engine_ids_.end()) id = it->second;
      }
      // Reported finished by the next step, which dispatch() passes on.
      if (id) engine_->abort(*id);
    }
    std::vector<StepOutput> outputs;
    try {
      outputs = engine_->step();
    } catch (const std::exception& e) {
      finish_all(FinishReason::Error, e.what());
      continue;
    }
    dispatch(outputs);
  }
  finish_all(FinishReason::Abort, {});
}

void AsyncEngine::admit(std::vector<Submission> submissions) {
  for (Submission& s : submissions) {
    const auto prompt_tokens = static_cast<int64_t>(s.prompt.size());
    RequestId id = 0;
    try {
      id = engine_->add(std::move(s.prompt), s.params, std::move(s.sink));
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mu_);
        active_.erase(s.id);
      }
      s.channel->push({{}, bare_result(FinishReason::Error, prompt_tokens), e.what()});
      continue;
    }
    live_.emplace(id, Live{s.id, s.channel});
    std::lock_guard lock(mu_);
    engine_ids_.emplace(s.id, id);
  }
}

void AsyncEngine::publish_blocks() {
  std::lock_guard lock(mu_);
  free_kv_blocks_ = engine_->free_kv_blocks();
}

void AsyncEngine::dispatch(const std::vector<StepOutput>& outputs) {
  // Blocks first, so a reader that sees its request finished sees them freed.
  publish_blocks();
  for (const StepOutput& o : outputs) {
    auto it = live_.find(o.id);
    if (it == live_.end()) continue;
    if (!o.finished) {
      if (!o.tokens.empty()) it->second.channel->push({o.tokens, std::nullopt, {}, o.logprobs});
      continue;
    }
    std::optional<RequestResult> r = engine_->take_result(o.id);
    release(it, {o.tokens, r ? std::move(r) : bare_result(o.reason, 0), {}, o.logprobs});
  }
}

void AsyncEngine::release(std::unordered_map<RequestId, Live>::iterator it, StreamItem last) {
  const Live live = it->second;
  live_.erase(it);
  {
    std::lock_guard lock(mu_);
    engine_ids_.erase(live.handle);
    active_.erase(live.handle);
  }
  live.channel->push(std::move(last));
}

void AsyncEngine::finish_all(FinishReason reason, const std::string& error) {
  std::vector<Submission> queued;
  if (reason == FinishReason::Abort) {
    // Shutting down: what never reached the engine is aborted too.
    std::lock_guard lock(mu_);
    queued.swap(incoming_);
    aborts_.clear();
  }
  for (auto& [id, live] : live_) {
    try {
      reason == FinishReason::Abort ? engine_->abort(id) : engine_->fail(id);
    } catch (const std::exception&) {
      // The failed step left the request half-updated; its record below is all
      // there is.
    }
  }
  publish_blocks();
  while (!live_.empty()) {
    auto it = live_.begin();
    std::optional<RequestResult> r = engine_->take_result(it->first);
    release(it, {{}, r ? std::move(r) : bare_result(reason, 0), error});
  }
  for (Submission& s : queued) {
    {
      std::lock_guard lock(mu_);
      active_.erase(s.id);
    }
    s.channel->push({{}, bare_result(FinishReason::Abort, static_cast<int64_t>(s.prompt.size())), {}});
  }
}

}  // namespace flashdraft::engine
