#include "server/choice_stream.h"

#include <algorithm>

#include "server/metrics.h"
#include "serving/text_output.h"

namespace flashdraft::server {

// The text side of the request. The token sink runs on the engine thread,
// next() on an HTTP thread: the mutex orders them.
struct ChoiceStream::Text {
  Text(const tokenizer::Tokenizer& tok, bool skip_special, std::vector<std::string> stops)
      : output(tok, std::move(stops), skip_special) {}

  // The token sink: false once a stop string is complete.
  bool push(int32_t token) {
    std::lock_guard lock(mu);
    const serving::TextOutput::Delta d = output.push(token);
    pending += d.text;
    return !d.stopped;
  }
  // End of the request: what was held back.
  void finish() {
    std::lock_guard lock(mu);
    pending += output.finish().text;
  }
  std::string take() {
    std::lock_guard lock(mu);
    return std::exchange(pending, {});
  }
  std::string stop_string() {
    std::lock_guard lock(mu);
    return output.stop_string();
  }

  std::mutex mu;
  serving::TextOutput output;
  std::string pending;
};

ChoiceStream::ChoiceStream(Generator& generator, std::vector<int32_t> prompt, const engine::SamplingParams& params,
                           const tokenizer::Tokenizer& tokenizer, bool skip_special_tokens, Metrics* metrics)
    : generator_(generator),
      metrics_(metrics),
      text_(std::make_shared<Text>(tokenizer, skip_special_tokens, params.stop)),
      stop_token_ids_(params.stop_token_ids),
      prompt_tokens_(static_cast<int64_t>(prompt.size())) {
  handle_ = generator_.submit(std::move(prompt), params, [text = text_](int32_t token) { return text->push(token); });
  if (metrics_) metrics_->request_submitted();
}

ChoiceStream::~ChoiceStream() {
  if (!finished_) abort();
}

void ChoiceStream::abort() {
  if (finished_) return;
  generator_.abort(handle_);
  finished_ = true;
  finish_reason_ = "abort";
  if (metrics_) {
    FinishedRequest r;
    const auto now = std::chrono::steady_clock::now();
    r.e2e_seconds = std::chrono::duration<double>(now - arrival_).count();
    if (first_token_) r.ttft_seconds = std::chrono::duration<double>(*first_token_ - arrival_).count();
    r.generation_tokens = completion_tokens_;
    r.finish_reason = finish_reason_;
    metrics_->record(r, first_token_.has_value());
  }
}

std::optional<ChoiceProgress> ChoiceStream::next(std::chrono::milliseconds timeout) {
  if (finished_) return std::nullopt;
  std::optional<engine::StreamItem> item = handle_.channel->pop(timeout);
  if (!item) return std::nullopt;
  if (!item->tokens.empty()) {
    if (!first_token_) {
      first_token_ = std::chrono::steady_clock::now();
      if (metrics_) {
        metrics_->request_started();
        metrics_->add_prompt_tokens(prompt_tokens_);
      }
    }
    completion_tokens_ += static_cast<int64_t>(item->tokens.size());
    if (metrics_) metrics_->add_generation_tokens(static_cast<int64_t>(item->tokens.size()));
  }
  if (item->last()) finish(*item);
  return ChoiceProgress{text_->take(), finished_, std::move(item->logprobs)};
}

void ChoiceStream::finish(const engine::StreamItem& last) {
  // The engine calls the sink no more: the held-back text is final.
  text_->finish();
  finished_ = true;
  const engine::RequestResult& r = *last.result;
  finish_reason_ = engine::finish_reason_name(r.reason);
  error_ = last.error;
  completion_tokens_ = static_cast<int64_t>(r.tokens.size());
  if (r.reason == engine::FinishReason::Stop) {
    if (r.stop == engine::StopReason::kStopString) {
      stop_reason_ = text_->stop_string();
    } else if (!r.tokens.empty() && std::find(stop_token_ids_.begin(), stop_token_ids_.end(), r.tokens.back()) !=
                                        stop_token_ids_.end()) {
      stop_reason_ = r.tokens.back();  // vLLM names the stop token; EOS stays null
    }
  }
  if (metrics_) {
    FinishedRequest f;
    const auto now = std::chrono::steady_clock::now();
    f.e2e_seconds = std::chrono::duration<double>(now - arrival_).count();
    if (first_token_) f.ttft_seconds = std::chrono::duration<double>(*first_token_ - arrival_).count();
    f.generation_tokens = completion_tokens_;
    f.finish_reason = finish_reason_;
    f.preemptions = r.preemptions;
    f.spec = r.spec;
    metrics_->record(f, first_token_.has_value());
  }
}

}  // namespace flashdraft::server
