#include "server/serve_command.h"

#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "core/error.h"
#include "server/http_server.h"
#include "server/serving_model.h"
#include "server/stop_signals.h"
#include "serving/model_dir.h"

namespace flashdraft::server {
namespace {

void check_flags(ServeOptions& o) {
  ServerOptions& s = o.server;
  if (!s.tool_call_parser.empty() && s.tool_call_parser != "hermes") {
    throw UsageError(fmt::format("--tool-call-parser {}: only hermes (Qwen3's <tool_call> format) is supported",
                                 s.tool_call_parser));
  }
  if (s.enable_auto_tool_choice && s.tool_call_parser.empty()) {
    throw UsageError("--enable-auto-tool-choice needs --tool-call-parser hermes");
  }
  if (!s.reasoning_parser.empty() && s.reasoning_parser != "qwen3") {
    throw UsageError(fmt::format("--reasoning-parser {}: only qwen3 (<think> blocks) is supported", s.reasoning_parser));
  }
  if (s.port < 0 || s.port > 65535) throw UsageError(fmt::format("--port: must be in [0, 65535], got {}", s.port));
  if (s.max_pending_requests < 1) {
    throw UsageError(fmt::format("--max-pending-requests: must be >= 1, got {}", s.max_pending_requests));
  }
  if (!(o.shutdown_timeout >= 0)) throw UsageError("--shutdown-timeout: must be >= 0 seconds");
  // As vLLM: the flag, else the environment.
  for (const char* var : {"VLLM_API_KEY", "FLASHDRAFT_API_KEY"}) {
    if (!s.api_key.empty()) break;
    if (const char* key = std::getenv(var)) s.api_key = key;
  }
  if (s.served_model_name.empty()) s.served_model_name = o.engine.model;
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API (as `vllm serve`)");
  cmd->footer(
      "Endpoints: POST /v1/completions, /v1/chat/completions (streaming with \"stream\": true), GET /v1/models,\n"
      "/health (503 while loading, then 200), /metrics (Prometheus, vLLM's names), /version, POST /tokenize,\n"
      "/detokenize. With an API key, /v1 routes need 'Authorization: Bearer KEY'. SIGTERM or Ctrl-C stops\n"
      "gracefully. Sampling defaults come from the model's generation_config.json.");
  serving::add_engine_flags(*cmd, o.engine);
  cmd->add_option("--host", o.server.host, "Address to listen on (default: 127.0.0.1)")->type_name("ADDR");
  cmd->add_option("--port", o.server.port, "Port to listen on; 0 picks a free one (default: 8000)")->type_name("PORT");
  cmd->add_option("--api-key", o.server.api_key,
                  "Require 'Authorization: Bearer KEY' on /v1 routes (default: $VLLM_API_KEY, else "
                  "$FLASHDRAFT_API_KEY, else none)")
      ->type_name("KEY");
  cmd->add_option("--served-model-name", o.server.served_model_name,
                  "The model name clients send and see (default: --model as given)")
      ->type_name("NAME");
  cmd->add_flag("--enable-auto-tool-choice", o.server.enable_auto_tool_choice,
                "Let the model call the request's tools (tool_choice \"auto\"); needs --tool-call-parser");
  cmd->add_option("--tool-call-parser", o.server.tool_call_parser,
                  "How tool calls are written: hermes (Qwen3's <tool_call>{json}</tool_call>)")
      ->type_name("NAME");
  cmd->add_option("--reasoning-parser", o.server.reasoning_parser,
                  "qwen3: a leading <think>...</think> block goes to reasoning_content")
      ->type_name("NAME");
  cmd->add_option("--max-pending-requests", o.server.max_pending_requests,
                  fmt::format("Generation requests in flight (running or queued) beyond which the server answers "
                              "503 (default: {})",
                              o.server.max_pending_requests))
      ->type_name("N");
  cmd->add_option("--shutdown-timeout", o.shutdown_timeout,
                  "On SIGTERM, seconds in-flight requests get to finish before they are aborted (default: 10)")
      ->type_name("SECONDS");
  return cmd;
}

void run_serve(ServeOptions& o) {
#ifndef FLASHDRAFT_HTTP_SERVER
  (void)o;
  throw Error("this build has no HTTP server: cpp-httplib was not found when it was configured "
              "(apt-get install libcpp-httplib-dev, then rebuild)");
#else
  check_flags(o);
  const serving::EngineOptions engine_options = serving::engine_options(o.engine);
  // The small files first: a wrong --model fails before anything listens.
  serving::ModelFiles files = serving::read_model_files(engine_options.model);

  StopSignals stop_signals;

  HttpServer server(o.server);
  const int port = server.start();
  fmt::print(stderr, "flashdraft: listening on http://{}:{} (model loading; GET /health is 503 until ready)\n",
             o.server.host, port);
  std::fflush(stderr);

  std::atomic<bool> loaded{false}, failed{false};
  std::string load_error;
  std::thread loader([&] {
    try {
      server.set_ready(make_serving_model(serving::build_engine(std::move(files), engine_options, stderr)));
      fmt::print(stderr, "flashdraft: ready; serving {} on http://{}:{}\n", o.server.served_model_name,
                 o.server.host, port);
      std::fflush(stderr);
      loaded = true;
    } catch (const std::exception& e) {
      load_error = e.what();
      failed = true;
    }
  });

  int signal_number = 0;
  while (!failed) {
    signal_number = stop_signals.wait(std::chrono::milliseconds(200));
    if (signal_number > 0) break;
  }
  if (failed) {
    loader.join();
    server.shutdown(std::chrono::milliseconds(0));
    throw Error("loading the model failed: " + load_error);
  }
  fmt::print(stderr, "flashdraft: {} received; finishing requests in flight (up to {} s)\n",
             signal_number == SIGINT ? "SIGINT" : "SIGTERM", o.shutdown_timeout);
  std::fflush(stderr);
  server.shutdown(std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout * 1000)));
  if (!loaded && !failed) {
    // Stopped while the weights load: nothing is in flight, and the load
    // cannot be interrupted; leave without waiting for it.
    fmt::print(stderr, "flashdraft: stopped\n");
    std::fflush(stderr);
    std::_Exit(0);
  }
  loader.join();
  fmt::print(stderr, "flashdraft: stopped\n");
#endif
}

}  // namespace flashdraft::server
