#include "engine/request.h"

#include <random>
#include <stdexcept>
#include <string>
#include <utility>

namespace flashdraft::engine {

const char* request_state_name(RequestState state) {
  switch (state) {
    case RequestState::Waiting:
      return "waiting";
    case RequestState::Prefilling:
      return "prefilling";
    case RequestState::Decoding:
      return "decoding";
    case RequestState::Finished:
      return "finished";
  }
  return "?";
}

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Abort:
      return "abort";
    case FinishReason::Error:
      return "error";
  }
  return "?";
}

FinishReason finish_reason_of(StopReason stop) {
  return stop == StopReason::kEos || stop == StopReason::kStopString ? FinishReason::Stop : FinishReason::Length;
}

Request::Request(RequestId id_, std::vector<int32_t> prompt_, const SamplingParams& params_)
    : id(id_), prompt(std::move(prompt_)), params(params_) {
  validate(params);
  if (params.seed) {
    seed = *params.seed;
  } else {
    std::random_device rd;
    seed = uint64_t{rd()} << 32 | rd();
  }
}

int32_t Request::token(int64_t pos) const {
  const auto p = static_cast<size_t>(pos);
  if (pos < 0 || p >= prompt.size() + output.size()) {
    throw std::logic_error("request " + std::to_string(id) + ": no token at position " + std::to_string(pos));
  }
  return p < prompt.size() ? prompt[p] : output[p - prompt.size()];
}

int32_t Request::anchor() const {
  if (state != RequestState::Decoding || output.empty()) {
    throw std::logic_error("request " + std::to_string(id) + ": anchor asked while " + request_state_name(state));
  }
  return output.back();
}

void Request::on_prefill(int64_t rows, std::optional<int32_t> first_token) {
  if (state != RequestState::Prefilling || rows <= 0 || rows > prefill_remaining()) {
    throw std::logic_error("request " + std::to_string(id) + ": prefill of " + std::to_string(rows) + " rows while " +
                           request_state_name(state) + " with " + std::to_string(prefill_remaining()) +
                           " positions left");
  }
  const bool complete = rows == prefill_remaining();
  if (complete != first_token.has_value()) {
    throw std::logic_error("request " + std::to_string(id) +
                           (complete ? ": prefill completed without a first token"
                                     : ": token given for a prefill chunk that is not the last"));
  }
  num_computed += rows;
  if (complete) {
    output.push_back(*first_token);
    state = RequestState::Decoding;
  }
}

void Request::on_decode(std::span<const int32_t> emitted) {
  if (state != RequestState::Decoding || emitted.empty()) {
    throw std::logic_error("request " + std::to_string(id) + ": decode step of " + std::to_string(emitted.size()) +
                           " tokens while " + request_state_name(state));
  }
  num_computed += static_cast<int64_t>(emitted.size());
  output.insert(output.end(), emitted.begin(), emitted.end());
}

}  // namespace flashdraft::engine
