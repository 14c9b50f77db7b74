#pragma once
// The JSON body of one benchmark request: streamed, with usage in the last
// chunk (stream_options.include_usage), the prompt as `prompt` for
// /v1/completions or as one user message for /v1/chat/completions.
// max_tokens is used for both (chat servers accept it beside
// max_completion_tokens; llama.cpp and older ones only it).
#include <string>

#include "bench_serve/bench_config.h"

namespace flashdraft::bench_serve {

std::string request_body(const BenchConfig& config, const BenchPrompt& prompt);

}  // namespace flashdraft::bench_serve
