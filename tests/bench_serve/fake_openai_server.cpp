#include "fake_openai_server.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace flashdraft::bench_serve::test {
namespace {

using nlohmann::json;

constexpr int kDraftLength = 15;

std::string sse(const json& j) { return "data: " + j.dump() + "\n\n"; }

json content_chunk(bool chat, const std::string& text, const char* finish) {
  json choice = {{"index", 0}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
  if (chat) {
    choice["delta"] = text.empty() ? json::object() : json{{"content", text}};
  } else {
    choice["text"] = text;
  }
  return {{"id", "x"}, {"object", chat ? "chat.completion.chunk" : "text_completion"}, {"choices", {choice}}};
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json{{"error", {{"message", message}, {"type", "invalid_request_error"}, {"code", status}}}}.dump(),
                  "application/json");
}

}  // namespace

FakeOpenAiServer::FakeOpenAiServer(FakeScript script)
    : script_(std::move(script)), http_(std::make_unique<httplib::Server>()) {
  auto authorized = [this](const httplib::Request& req, httplib::Response& res) {
    if (script_.api_key.empty() || req.get_header_value("Authorization") == "Bearer " + script_.api_key) return true;
    send_error(res, 401, "bad key");
    return false;
  };
  http_->Get("/v1/models", [this, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    res.set_content(json{{"object", "list"}, {"data", {{{"id", "fake-model"}, {"object", "model"}}}}}.dump(),
                    "application/json");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu_);
    std::string text = "# TYPE vllm:spec_decode_num_drafts counter\n";
    text += "vllm:spec_decode_num_drafts_total{model_name=\"fake-model\"} " + std::to_string(drafts_) + "\n";
    text += "vllm:spec_decode_num_draft_tokens_total{model_name=\"fake-model\"} " +
            std::to_string(drafts_ * kDraftLength) + "\n";
    text += "vllm:spec_decode_num_accepted_tokens_total{model_name=\"fake-model\"} " + std::to_string(accepted_) + "\n";
    text += "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"fake-model\",position=\"0\"} " +
            std::to_string(drafts_) + "\n";
    res.set_content(text, "text/plain; version=0.0.4");
  });
  auto generate = [this, authorized](bool chat) {
    return [this, authorized, chat](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      json body = json::parse(req.body, nullptr, false);
      {
        std::lock_guard lock(mu_);
        bodies_.push_back(req.body);
      }
      if (body.is_discarded()) return send_error(res, 400, "malformed JSON");
      if (body.value("model", "") != "fake-model") return send_error(res, 404, "no model " + body.value("model", ""));
      const std::string prompt = chat ? body["messages"][0].value("content", "") : body.value("prompt", "");
      if (prompt == "FAIL") return send_error(res, 500, "scripted failure");
      const int now = ++in_flight_;
      for (int seen = max_in_flight_.load(); now > seen && !max_in_flight_.compare_exchange_weak(seen, now);) {
      }
      res.set_chunked_content_provider("text/event-stream", [this, chat, prompt](size_t, httplib::DataSink& sink) {
        auto put = [&](const std::string& s) { sink.write(s.data(), s.size()); };
        std::this_thread::sleep_for(script_.first_delay);
        for (int i = 0; i < script_.chunks; ++i) {
          if (i > 0) std::this_thread::sleep_for(script_.gap);
          put(sse(content_chunk(chat, std::string(script_.tokens_per_chunk, 'a' + i % 26), nullptr)));
          if (prompt == "STREAM_ERROR") {
            put(sse(json{{"error", {{"message", "scripted stream error"}, {"code", 500}}}}));
            break;
          }
        }
        put(sse(content_chunk(chat, "", "length")));
        if (script_.send_usage)
          put(sse(json{{"choices", json::array()},
                       {"usage", {{"prompt_tokens", 7}, {"completion_tokens", script_.chunks * script_.tokens_per_chunk}}}}));
        {
          std::lock_guard lock(mu_);
          drafts_ += script_.chunks;
          accepted_ += script_.chunks * (script_.tokens_per_chunk - 1);
        }
        --in_flight_;
        put("data: [DONE]\n\n");
        sink.done();
        return true;
      });
    };
  };
  http_->Post("/v1/completions", generate(false));
  http_->Post("/v1/chat/completions", generate(true));
  port_ = http_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { http_->listen_after_bind(); });
}

FakeOpenAiServer::~FakeOpenAiServer() {
  http_->stop();
  thread_.join();
}

std::string FakeOpenAiServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<std::string> FakeOpenAiServer::bodies() const {
  std::lock_guard lock(mu_);
  return bodies_;
}

}  // namespace flashdraft::bench_serve::test
