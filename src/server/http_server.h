#pragma once
// The HTTP side of `flashdraft serve` (cpp-httplib): routes, the API key,
// OpenAI-style error bodies for every failure (bad JSON, unknown route, body
// too large, loading, full), and the server's life: listening while the model
// loads (/health 503), ready (200), then a graceful stop.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "server/endpoints.h"
#include "server/metrics.h"
#include "server/server_options.h"
#include "server/serving_model.h"

namespace httplib {
class Server;
}

namespace flashdraft::server {

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // shutdown(0) if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: any free one) and serves on a thread of its
  // own; returns the port. Throws flashdraft::Error when it cannot bind.
  int start();
  // Loading finished: the endpoints answer from now on.
  void set_ready(std::shared_ptr<ServingModel> model);
  // New generation requests get 503; those in flight get up to `grace` to
  // finish, then are aborted (their streams end with finish_reason "abort");
  // then the server stops listening. Idempotent.
  void shutdown(std::chrono::milliseconds grace);

  int port() const { return port_; }
  Metrics& metrics() { return metrics_; }
  // Generation requests being answered now.
  int active_requests() const { return active_.load(); }

 private:
  enum class State { Loading, Ready, Stopping };
  void routes();
  std::shared_ptr<Endpoints> endpoints() const;  // null unless Ready

  const ServerOptions options_;
  Metrics metrics_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  int port_ = -1;

  mutable std::mutex mu_;
  State state_ = State::Loading;
  std::shared_ptr<ServingModel> model_;
  std::shared_ptr<Endpoints> endpoints_;
  std::atomic<int> active_{0};
  std::mutex shutdown_mu_;
  bool stopped_ = false;
};

}  // namespace flashdraft::server
