#pragma once
// The OpenAI endpoints over a loaded model, apart from HTTP: each takes the
// request body and returns the response body, or a stream of server-sent
// events. Errors are ApiError (status, message, the offending field).
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/metrics.h"
#include "server/openai_requests.h"
#include "server/request_fields.h"
#include "server/server_options.h"
#include "server/serving_model.h"

namespace flashdraft::server {

// The client of one request, as a generation endpoint sees it.
struct Client {
  std::function<bool(std::string_view)> write;  // streams only; false once the client is gone
  std::function<bool()> gone;                   // polled while waiting for the engine
};

struct Reply {
  Json body;  // when there is no stream
  // An SSE stream, run once by the HTTP layer after the headers went out;
  // returns when the stream has ended or the client is gone (whose requests
  // are then aborted).
  std::function<void(const Client& client)> stream;
};

class Endpoints {
 public:
  Endpoints(const ServerOptions& options, std::shared_ptr<ServingModel> model, Metrics& metrics);

  // POST /v1/completions and /v1/chat/completions. A non-streamed reply
  // waits for the engine here, aborting its requests when client.gone().
  Reply completions(const std::string& body, const Client& client);
  Reply chat_completions(const std::string& body, const Client& client);
  Json models() const;                                // GET /v1/models
  Json tokenize(const std::string& body) const;       // POST /tokenize (vLLM)
  Json detokenize(const std::string& body) const;     // POST /detokenize (vLLM)
  ServingModel& model() { return *model_; }

 private:
  void check_model(const std::optional<std::string>& requested) const;
  std::string render_chat(const ChatRequest& request) const;

  const ServerOptions& options_;
  std::shared_ptr<ServingModel> model_;
  Metrics& metrics_;
};

}  // namespace flashdraft::server
