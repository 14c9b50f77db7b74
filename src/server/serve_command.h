#pragma once
// `flashdraft serve`: vLLM's `vllm serve` for flashdraft, same flag names:
// an OpenAI-compatible HTTP server that listens at once (GET /health is 503
// while the model loads, then 200) and stops gracefully on SIGTERM / SIGINT.
#include <CLI/CLI.hpp>
#include <string>

#include "server/server_options.h"
#include "serving/engine_flags.h"

namespace flashdraft::server {

struct ServeOptions {
  serving::EngineFlags engine;  // the engine flags `generate` shares
  ServerOptions server;
  double shutdown_timeout = 10;  // seconds in-flight requests get on SIGTERM before they are aborted
};

CLI::App* add_serve_command(CLI::App& app, ServeOptions& options);
// Returns once stopped by a signal; throws UsageError / Error (load failures included).
void run_serve(ServeOptions& options);

}  // namespace flashdraft::server
