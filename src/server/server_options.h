#pragma once
// How `flashdraft serve` answers, from its flags (vLLM's names in comments).
#include <cstddef>
#include <string>

namespace flashdraft::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // --host
  int port = 8000;                 // --port; 0: any free port (printed)
  std::string api_key;             // --api-key / VLLM_API_KEY / FLASHDRAFT_API_KEY; empty: no key needed
  std::string served_model_name;   // --served-model-name (default: --model as given)
  bool enable_auto_tool_choice = false;  // --enable-auto-tool-choice
  std::string tool_call_parser;          // --tool-call-parser: "" or "hermes"
  std::string reasoning_parser;          // --reasoning-parser: "" or "qwen3"
  size_t max_request_bytes = 16u << 20;  // larger bodies: 413
  int max_pending_requests = 256;        // generation requests in flight beyond which: 503
};

}  // namespace flashdraft::server
