#pragma once
// The server in process on an ephemeral port, over the shipped models
// (models/target, models/drafter-full) or the scripted generator, and a
// small HTTP client for tests.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/serving_model.h"

namespace flashdraft::server::test {

std::string shipped_model_dir();  // models/target
std::string shipped_drafter_dir();  // models/drafter-full

// The real engine on the CPU over the shipped target (and drafter).
std::shared_ptr<ServingModel> engine_model(bool drafter, int64_t max_num_seqs = 4);
// The shipped target's tokenizer and chat template over ScriptedGenerator.
std::shared_ptr<ServingModel> scripted_model(std::chrono::milliseconds step_delay = std::chrono::milliseconds(2));

struct TestServer {
  // Started on 127.0.0.1, any free port; ready with `model` unless it is null.
  explicit TestServer(std::shared_ptr<ServingModel> model, ServerOptions options = {});
  ~TestServer();
  std::unique_ptr<HttpServer> server;
  std::shared_ptr<ServingModel> model;
  int port = 0;
};

struct HttpReply {
  int status = 0;  // 0: no response
  std::string body;
  std::string content_type;
  nlohmann::json json() const;  // the body parsed (fails the test when it is not JSON)
};

HttpReply http_get(int port, const std::string& path, const std::map<std::string, std::string>& headers = {});
HttpReply http_post(int port, const std::string& path, const std::string& body,
                    const std::map<std::string, std::string>& headers = {});
HttpReply http_post(int port, const std::string& path, const nlohmann::json& body,
                    const std::map<std::string, std::string>& headers = {});

// The JSON payloads of an SSE body, in order; "[DONE]" must be the last
// event and is not returned (the test fails when it is missing or the framing is off).
std::vector<nlohmann::json> sse_events(const std::string& body);

// A raw connection, for clients that go away mid-request.
class RawConnection {
 public:
  explicit RawConnection(int port);
  ~RawConnection();
  void send_post(const std::string& path, const std::string& body);
  // Reads until `needle` appears in what was received or `timeout` passes.
  bool read_until(const std::string& needle, std::chrono::milliseconds timeout);
  void close();

 private:
  int fd_ = -1;
  std::string received_;
};

// Polls `condition` until true or `timeout`.
template <typename F>
bool eventually(F condition, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

}  // namespace flashdraft::server::test
