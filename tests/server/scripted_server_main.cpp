// The HTTP server over the scripted generator, as a process: what the
// openai-npm end-to-end test runs for tool calls and reasoning, which the
// shipped tiny model never writes. The protocol layer is the real one.
// Usage: fd_scripted_server --model DIR [--api-key KEY]
// Prints "listening on http://127.0.0.1:PORT" to stderr; stops on SIGTERM.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "scripted_generator.h"
#include "server/http_server.h"
#include "server/stop_signals.h"
#include "serving/engine_builder.h"

using namespace flashdraft;

int main(int argc, char** argv) {
  std::string model_dir, api_key;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) model_dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--api-key")) api_key = argv[i + 1];
  }
  server::StopSignals stop;

  serving::ModelFiles files = serving::read_model_files(model_dir);
  auto model = std::make_shared<server::ServingModel>(files.tokenizer);
  model->root = files.dir.string();
  model->chat_template = files.chat_template;
  model->chat_template_error = files.chat_template_error;
  model->defaults = files.defaults;
  model->max_model_len = files.config.max_position_embeddings;
  // 20 ms between steps: the e2e test checks that a streamed answer comes in
  // pieces, which a stream writer delayed past one step (a loaded 2-core CI
  // machine, 2 ms steps) would merge into one.
  model->generator = std::make_unique<server::test::ScriptedGenerator>(
      files.tokenizer, *files.tokenizer.token_to_id("<|im_end|>"), std::chrono::milliseconds(20));

  server::ServerOptions options;
  options.port = 0;
  options.api_key = api_key;
  options.served_model_name = "scripted";
  options.enable_auto_tool_choice = true;
  options.tool_call_parser = "hermes";
  options.reasoning_parser = "qwen3";
  server::HttpServer http(options);
  const int port = http.start();
  http.set_ready(model);
  std::fprintf(stderr, "listening on http://127.0.0.1:%d\n", port);
  std::fflush(stderr);
  while (stop.wait(std::chrono::milliseconds(1000)) == 0) {
  }
  http.shutdown(std::chrono::seconds(5));
  return 0;
}
