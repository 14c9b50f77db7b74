#include "server/serving_model.h"

#include "serving/engine_builder.h"

namespace flashdraft::server {

std::shared_ptr<ServingModel> make_serving_model(serving::LoadedEngine loaded) {
  auto m = std::make_shared<ServingModel>(loaded.files.tokenizer);
  m->root = loaded.files.dir.string();
  m->chat_template = loaded.files.chat_template;
  m->chat_template_error = loaded.files.chat_template_error;
  m->defaults = loaded.files.defaults;
  m->default_max_tokens = loaded.files.generation.max_new_tokens;
  m->max_model_len = loaded.max_model_len;
  struct Models {
    std::unique_ptr<model::Qwen3Model> target;
    std::unique_ptr<model::DFlashDrafter> drafter;
  };
  m->keep_alive = std::make_shared<Models>(Models{std::move(loaded.target), std::move(loaded.drafter)});
  m->generator = std::make_unique<EngineGenerator>(std::move(loaded.engine));
  return m;
}

}  // namespace flashdraft::server
