#pragma once
// The engine, ready for serving: one thread owns the Engine (and so the
// models, which are not thread-safe) and runs it step by step; any other
// thread submits requests, reads each request's outputs from its own channel
// and aborts requests. The loop sleeps on a condition variable while there is
// nothing to do.
//
// Every request gets exactly the tokens it would get from an Engine driven
// directly (the engine's steps are batch invariant), only delivered across
// threads: one item per step that emitted tokens, the last item carrying the
// finished request's record.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/llm_engine.h"

namespace flashdraft::engine {

struct StreamItem {
  // Emitted by one step (a final EOS included); may be empty on the last item.
  std::vector<int32_t> tokens;
  std::optional<RequestResult> result;  // on the last item only
  std::string error;                    // why, when result->reason is FinishReason::Error
  std::vector<TokenLogprobs> logprobs = {};  // of `tokens`, when the request asked
  bool last() const { return result.has_value(); }
};

// One request's outputs, pushed by the engine thread, popped by any thread.
class RequestChannel {
 public:
  // The next item, waiting up to `timeout` for one; nullopt on timeout or
  // once the last item has been popped (done() tells which).
  std::optional<StreamItem> pop(std::chrono::milliseconds timeout);
  // The last item has been pushed (the request is finished), popped or not.
  bool finished() const;
  // The last item has been popped: nothing more will come.
  bool done() const;

  void push(StreamItem item);  // the engine thread's side

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamItem> items_;
  bool finished_ = false, done_ = false;
};

struct RequestHandle {
  uint64_t id = 0;  // the AsyncEngine's own (the Engine's ids are assigned on its thread)
  std::shared_ptr<RequestChannel> channel;
};

class AsyncEngine {
 public:
  // Takes the engine over and starts its thread; nothing else may touch the
  // engine (or its models) until this object is gone.
  explicit AsyncEngine(std::unique_ptr<Engine> engine);
  ~AsyncEngine();  // shutdown()
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // Queues a request; a prompt the engine rejects finishes with
  // FinishReason::Error (the reason in the item's error). `on_token` as in
  // Engine::add (stop strings), called on the engine thread. Throws
  // flashdraft::Error after shutdown().
  RequestHandle submit(std::vector<int32_t> prompt, const SamplingParams& params, TokenSink on_token = {});
  // Finishes the request with FinishReason::Abort within one step; false when
  // it has already finished (or was never submitted here). A request already
  // finishing in the step under way keeps its own reason: the channel's last
  // item is what happened.
  bool abort(const RequestHandle& handle);

  // Stops the loop after its current step: requests still queued or running
  // finish with FinishReason::Abort, their blocks freed. Idempotent.
  void shutdown();

  // Free KV blocks as of the last time the loop was idle, and requests in
  // flight now: for tests and metrics.
  int64_t free_kv_blocks() const;
  int64_t num_kv_blocks() const { return num_kv_blocks_; }
  size_t in_flight() const;

 private:
  struct Submission {
    uint64_t id;
    std::vector<int32_t> prompt;
    SamplingParams params;
    TokenSink sink;
    std::shared_ptr<RequestChannel> channel;
  };
  struct Live {
    uint64_t handle;
    std::shared_ptr<RequestChannel> channel;
  };

  void loop();
  void admit(std::vector<Submission> submissions);
  void dispatch(const std::vector<StepOutput>& outputs);
  // Forgets a live request and pushes its last item.
  void release(std::unordered_map<RequestId, Live>::iterator it, StreamItem last);
  void finish_all(FinishReason reason, const std::string& error);
  void publish_blocks();

  std::unique_ptr<Engine> engine_;  // the engine thread's alone
  const int64_t num_kv_blocks_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<Submission> incoming_;
  std::vector<uint64_t> aborts_;
  std::unordered_set<uint64_t> active_;                 // handles submitted and not yet finished
  std::unordered_map<uint64_t, RequestId> engine_ids_;  // handle -> engine id, for requests in the engine
  uint64_t next_handle_ = 1;
  int64_t free_kv_blocks_;
  bool stop_ = false;

  std::unordered_map<RequestId, Live> live_;  // the engine thread's alone
  std::mutex join_mu_;
  std::thread thread_;  // last: starts once everything above is built
};

}  // namespace flashdraft::engine
