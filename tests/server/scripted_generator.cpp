#include "scripted_generator.h"

#include <chrono>

#include "core/error.h"

namespace flashdraft::server::test {

std::string scripted_answer(const std::string& prompt) {
  if (prompt.find("<tool_response>") != std::string::npos) return "It is sunny in Paris, 22 degrees.";
  if (prompt.find("get_weather") != std::string::npos) {
    const std::string call =
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    // A prompt that already starts the call (tool_choice "required" or named): the rest of it.
    for (size_t k = call.size(); k > 0; --k) {
      if (prompt.size() >= k && prompt.compare(prompt.size() - k, k, call, 0, k) == 0) return call.substr(k);
    }
    return call;
  }
  // Qwen3's template closes an empty think block itself when thinking is off.
  const std::string answer = "Hello! How can I help you today?";
  if (prompt.find("<think>") != std::string::npos) return answer;
  return "<think>\nThe user greets me; I greet back.\n</think>\n\n" + answer;
}

ScriptedGenerator::ScriptedGenerator(tokenizer::Tokenizer tokenizer, int32_t eos, std::chrono::milliseconds step_delay)
    : tokenizer_(std::move(tokenizer)), eos_(eos), step_delay_(step_delay) {}

ScriptedGenerator::~ScriptedGenerator() {
  shutdown();
  for (std::thread& t : threads_) t.join();
}

engine::RequestHandle ScriptedGenerator::submit(std::vector<int32_t> prompt, const engine::SamplingParams& params,
                                                engine::TokenSink on_token) {
  std::lock_guard lock(mu_);
  if (stopped_) throw Error("the scripted generator is shut down");
  engine::RequestHandle h{next_id_++, std::make_shared<engine::RequestChannel>()};
  aborted_[h.id] = std::make_shared<std::atomic<bool>>(false);
  threads_.emplace_back(&ScriptedGenerator::run, this, h.id, std::move(prompt), params, std::move(on_token), h.channel);
  return h;
}

bool ScriptedGenerator::abort(const engine::RequestHandle& handle) {
  std::lock_guard lock(mu_);
  auto it = aborted_.find(handle.id);
  if (it == aborted_.end()) return false;
  *it->second = true;
  return true;
}

void ScriptedGenerator::shutdown() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  for (auto& [id, flag] : aborted_) *flag = true;
}

void ScriptedGenerator::run(uint64_t id, std::vector<int32_t> prompt, engine::SamplingParams params,
                            engine::TokenSink sink, std::shared_ptr<engine::RequestChannel> channel) {
  std::shared_ptr<std::atomic<bool>> aborted;
  {
    std::lock_guard lock(mu_);
    aborted = aborted_[id];
  }
  std::vector<int32_t> script = tokenizer_.encode(scripted_answer(tokenizer_.decode(prompt)), true);
  script.push_back(eos_);
  engine::RequestResult result;
  result.finished = true;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  result.reason = engine::FinishReason::Length;
  result.stop = engine::StopReason::kMaxTokens;
  constexpr size_t kTokensPerStep = 3;
  size_t i = 0;
  while (result.reason == engine::FinishReason::Length && i < script.size() && !*aborted) {
    std::this_thread::sleep_for(step_delay_);
    std::vector<int32_t> step;
    for (size_t k = 0; k < kTokensPerStep && i < script.size(); ++k, ++i) {
      if (static_cast<int>(result.tokens.size()) >= params.max_tokens) break;
      const int32_t token = script[i];
      step.push_back(token);
      result.tokens.push_back(token);
      if (token == eos_) {
        result.reason = engine::FinishReason::Stop;
        result.stop = engine::StopReason::kEos;
        break;
      }
      if (sink && !sink(token)) {
        result.reason = engine::FinishReason::Stop;
        result.stop = engine::StopReason::kStopString;
        break;
      }
    }
    if (step.empty()) break;  // max_tokens reached
    const bool last = result.reason != engine::FinishReason::Length || i >= script.size() ||
                      static_cast<int>(result.tokens.size()) >= params.max_tokens;
    if (!last) channel->push({step, std::nullopt, {}});
    else {
      channel->push({step, result, {}});
      return;
    }
  }
  if (*aborted) result.reason = engine::FinishReason::Abort;
  channel->push({{}, result, {}});
}

}  // namespace flashdraft::server::test
