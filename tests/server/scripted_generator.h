#pragma once
// A stand-in for the engine that answers with fixed text, so the protocol
// layer (tool calls, reasoning, streaming) can be driven end to end with
// outputs the shipped tiny model never writes. It honours what the engine
// does for the server: tokens in steps of a few, the token sink (stop
// strings), max_tokens, EOS at the end, abort, shutdown.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/generator.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::server::test {

// What the script answers to a rendered prompt (Qwen3's chat template):
// a tool result in the prompt -> a sentence about it; tools offered -> a
// hermes tool call to get_weather (its rest when the prompt ends with its
// start, as a forced tool_choice leaves it); thinking enabled -> a <think> block and
// an answer; otherwise the answer alone.
std::string scripted_answer(const std::string& prompt);

class ScriptedGenerator : public Generator {
 public:
  // eos: appended after the answer (as the engine reports it: in the tokens, not the sink).
  // step_delay: time between steps (a slow engine, for capacity tests).
  ScriptedGenerator(tokenizer::Tokenizer tokenizer, int32_t eos,
                    std::chrono::milliseconds step_delay = std::chrono::milliseconds(2));
  ~ScriptedGenerator() override;

  engine::RequestHandle submit(std::vector<int32_t> prompt, const engine::SamplingParams& params,
                               engine::TokenSink on_token) override;
  bool abort(const engine::RequestHandle& handle) override;
  void shutdown() override;
  int64_t free_kv_blocks() const override { return 0; }
  int64_t num_kv_blocks() const override { return 0; }

 private:
  void run(uint64_t id, std::vector<int32_t> prompt, engine::SamplingParams params, engine::TokenSink sink,
           std::shared_ptr<engine::RequestChannel> channel);

  tokenizer::Tokenizer tokenizer_;
  int32_t eos_;
  std::chrono::milliseconds step_delay_;
  std::mutex mu_;
  bool stopped_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::shared_ptr<std::atomic<bool>>> aborted_;
  std::vector<std::thread> threads_;
};

}  // namespace flashdraft::server::test
