#pragma once
// Everything the endpoints need of the loaded model: its tokenizer and chat
// template, its sampling defaults and context, and the generator. Built once
// loading finished; immutable afterwards but for the generator's own state.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "engine/sampling_params.h"
#include "server/generator.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::server {

struct ServingModel {
  explicit ServingModel(tokenizer::Tokenizer tok) : tokenizer(std::move(tok)) {}

  std::string root;  // the model directory, as /v1/models reports it
  tokenizer::Tokenizer tokenizer;
  std::optional<chat::ChatTemplate> chat_template;  // none: /v1/chat/completions answers 400 with the reason
  std::string chat_template_error;
  engine::SamplingParams defaults;               // from generation_config.json
  std::optional<int64_t> default_max_tokens;     // generation_config.json's max_new_tokens
  int64_t max_model_len = 0;
  // What the generator's engine refers to (the models): declared first, so
  // it is destroyed after the generator.
  std::shared_ptr<void> keep_alive;
  std::unique_ptr<Generator> generator;
};

}  // namespace flashdraft::server

namespace flashdraft::serving {
struct LoadedEngine;
}

namespace flashdraft::server {

// The built engine (on an AsyncEngine thread of its own) and what its model
// directory says, ready for the endpoints.
std::shared_ptr<ServingModel> make_serving_model(serving::LoadedEngine loaded);

}  // namespace flashdraft::server
