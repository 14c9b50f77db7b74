#pragma once
// What the server generates with: in production the AsyncEngine (the engine
// on its own thread); a test may put a scripted one in its place to drive the
// protocol layer with outputs a tiny model never writes (tool calls, <think>).
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/async_engine.h"

namespace flashdraft::server {

class Generator {
 public:
  virtual ~Generator() = default;
  // As AsyncEngine::submit: the request's items arrive on handle.channel;
  // `on_token` sees each emitted token that is not EOS / a stop token and
  // returns false to stop after it (a stop string).
  virtual engine::RequestHandle submit(std::vector<int32_t> prompt, const engine::SamplingParams& params,
                                       engine::TokenSink on_token) = 0;
  virtual bool abort(const engine::RequestHandle& handle) = 0;
  // Requests in flight finish with FinishReason::Abort; later submits throw.
  virtual void shutdown() = 0;
  virtual int64_t free_kv_blocks() const = 0;
  virtual int64_t num_kv_blocks() const = 0;
};

// The AsyncEngine over a built engine, which it owns.
class EngineGenerator : public Generator {
 public:
  explicit EngineGenerator(std::unique_ptr<engine::Engine> engine) : async_(std::move(engine)) {}
  engine::RequestHandle submit(std::vector<int32_t> prompt, const engine::SamplingParams& params,
                               engine::TokenSink on_token) override {
    return async_.submit(std::move(prompt), params, std::move(on_token));
  }
  bool abort(const engine::RequestHandle& handle) override { return async_.abort(handle); }
  void shutdown() override { async_.shutdown(); }
  int64_t free_kv_blocks() const override { return async_.free_kv_blocks(); }
  int64_t num_kv_blocks() const override { return async_.num_kv_blocks(); }

 private:
  engine::AsyncEngine async_;
};

}  // namespace flashdraft::server
