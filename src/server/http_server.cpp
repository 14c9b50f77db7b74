#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include "core/error.h"
#include "server/api_error.h"
#include "server/peer_watch.h"

namespace flashdraft::server {
namespace {

template <typename J>
void send_json(httplib::Response& res, int status, const J& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, J::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status(), e.body()); }

// Every handler's failures become OpenAI error bodies; nothing escapes to httplib.
template <typename F>
void guarded(httplib::Response& res, F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (const Error& e) {
    send_error(res, ApiError(400, e.what()));
  } catch (const std::bad_alloc&) {
    send_error(res, ApiError(500, "out of memory"));
  } catch (const std::exception& e) {
    send_error(res, ApiError(500, std::string("internal error: ") + e.what()));
  }
}

// One generation request's place among those in flight.
class Slot {
 public:
  Slot(std::atomic<int>& active, int limit) : active_(active) {
    if (active_.fetch_add(1) >= limit) {
      active_.fetch_sub(1);
      throw ApiError(503, fmt::format("the server is at capacity ({} requests in flight); retry later", limit));
    }
  }
  ~Slot() { active_.fetch_sub(1); }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

 private:
  std::atomic<int>& active_;
};

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), metrics_(options_.served_model_name), http_(std::make_unique<httplib::Server>()) {
  // A streaming request holds its thread until it ends; a few more threads
  // keep /health and /metrics answering when every slot is taken.
  const size_t threads = static_cast<size_t>(options_.max_pending_requests) + 8;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_request_bytes);
  routes();
}

HttpServer::~HttpServer() { shutdown(std::chrono::milliseconds(0)); }

int HttpServer::start() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ < 0) {
    throw Error(fmt::format("cannot listen on {}:{} (address in use, or not an address of this machine?)",
                            options_.host, options_.port));
  }
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  return port_;
}

void HttpServer::set_ready(std::shared_ptr<ServingModel> model) {
  auto endpoints = std::make_shared<Endpoints>(options_, model, metrics_);
  std::lock_guard lock(mu_);
  if (state_ == State::Stopping) return;
  model_ = std::move(model);
  endpoints_ = std::move(endpoints);
  state_ = State::Ready;
}

std::shared_ptr<Endpoints> HttpServer::endpoints() const {
  std::lock_guard lock(mu_);
  if (state_ == State::Loading) throw ApiError(503, "the model is still loading; retry shortly (GET /health says when)");
  if (state_ == State::Stopping) throw ApiError(503, "the server is shutting down");
  return endpoints_;
}

void HttpServer::shutdown(std::chrono::milliseconds grace) {
  std::lock_guard shutdown_lock(shutdown_mu_);
  if (stopped_) return;
  stopped_ = true;
  std::shared_ptr<ServingModel> model;
  {
    std::lock_guard lock(mu_);
    state_ = State::Stopping;
    model = model_;
  }
  auto wait_idle = [this](std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (active_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  wait_idle(grace);
  // What is left finishes as aborted; its handlers then end their responses.
  if (model) model->generator->shutdown();
  wait_idle(std::chrono::seconds(5));
  http_->stop();
  if (listener_.joinable()) listener_.join();
}

void HttpServer::routes() {
  using httplib::Request;
  using httplib::Response;
  using Handled = httplib::Server::HandlerResponse;

  // vLLM's rule: the key guards /v1 routes; /health, /metrics and the like stay open.
  http_->set_pre_routing_handler([this](const Request& req, Response& res) {
    if (options_.api_key.empty() || !req.path.starts_with("/v1")) return Handled::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + options_.api_key) return Handled::Unhandled;
    send_error(res, ApiError(401, "invalid or missing API key: send the header 'Authorization: Bearer <key>'",
                             std::nullopt, "invalid_api_key"));
    return Handled::Handled;
  });
  // httplib's own refusals (no such route, body too large, malformed HTTP)
  // get JSON bodies like ours.
  http_->set_error_handler([this](const Request& req, Response& res) {
    if (!res.body.empty()) return;
    std::string message;
    if (res.status == 404) {
      message = fmt::format("no route {} {}", req.method, req.path);
    } else if (res.status == 413) {
      message = fmt::format("the request body is larger than this server accepts ({} bytes)", options_.max_request_bytes);
    } else {
      message = fmt::format("the server refused the request (HTTP {})", res.status);
    }
    send_error(res, ApiError(res.status, message));
  });

  http_->Get("/health", [this](const Request&, Response& res) {
    guarded(res, [&] {
      endpoints();
      res.status = 200;
    });
  });
  http_->Get("/version", [](const Request&, Response& res) {
    send_json(res, 200, nlohmann::json{{"version", FLASHDRAFT_VERSION}});
  });
  http_->Get("/metrics", [this](const Request&, Response& res) {
    double usage = 0;
    {
      std::lock_guard lock(mu_);
      if (model_ && model_->generator->num_kv_blocks() > 0) {
        usage = 1.0 - static_cast<double>(model_->generator->free_kv_blocks()) /
                          static_cast<double>(model_->generator->num_kv_blocks());
      }
    }
    res.set_content(metrics_.render(usage), "text/plain; version=0.0.4; charset=utf-8");
  });
  http_->Get("/v1/models", [this](const Request&, Response& res) {
    guarded(res, [&] { send_json(res, 200, endpoints()->models()); });
  });
  http_->Post("/tokenize", [this](const Request& req, Response& res) {
    guarded(res, [&] { send_json(res, 200, endpoints()->tokenize(req.body)); });
  });
  http_->Post("/detokenize", [this](const Request& req, Response& res) {
    guarded(res, [&] { send_json(res, 200, endpoints()->detokenize(req.body)); });
  });

  using Method = Reply (Endpoints::*)(const std::string&, const Client&);
  auto generation = [this](Method method) {
    return [this, method](const Request& req, Response& res) {
      guarded(res, [&] {
        std::shared_ptr<Endpoints> ep = endpoints();
        auto slot = std::make_shared<Slot>(active_, options_.max_pending_requests);
        auto watch = std::make_shared<PeerWatch>(req.remote_addr, req.remote_port, req.local_port);
        Client client;
        client.gone = [watch] { return watch->gone(); };
        Reply reply = ((*ep).*method)(req.body, client);
        if (!reply.stream) {
          if (!reply.body.is_null()) send_json(res, 200, reply.body);
          return;
        }
        res.set_header("Cache-Control", "no-cache");
        // The provider owns the request's choices (dropping them aborts) and
        // its slot, until the stream has ended.
        res.set_chunked_content_provider(
            "text/event-stream", [stream = std::move(reply.stream), watch, slot, ep](size_t, httplib::DataSink& sink) {
              Client c;
              c.write = [&sink](std::string_view data) { return sink.write(data.data(), data.size()); };
              c.gone = [watch] { return watch->gone(); };
              stream(c);
              sink.done();
              return true;
            });
      });
    };
  };
  http_->Post("/v1/completions", generation(&Endpoints::completions));
  http_->Post("/v1/chat/completions", generation(&Endpoints::chat_completions));
}

}  // namespace flashdraft::server
