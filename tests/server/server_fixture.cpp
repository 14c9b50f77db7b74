#include "server_fixture.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>

#include "scripted_generator.h"
#include "serving/engine_builder.h"

namespace flashdraft::server::test {

std::string shipped_model_dir() { return std::string(FD_SOURCE_DIR) + "/models/target"; }
std::string shipped_drafter_dir() { return std::string(FD_SOURCE_DIR) + "/models/drafter-full"; }

std::shared_ptr<ServingModel> engine_model(bool drafter, int64_t max_num_seqs) {
  serving::EngineOptions o;
  o.model = shipped_model_dir();
  o.device = "cpu";
  o.max_num_seqs = max_num_seqs;
  o.max_model_len = 1024;
  if (drafter) o.speculative.draft_model = shipped_drafter_dir();
  // Fixed speculation: every step drafts, so the spec-decode counters move
  // for sure (adaptive speculation may choose no drafts on a loaded machine).
  o.speculative.adaptive = false;
  return make_serving_model(serving::build_engine(o, nullptr));
}

std::shared_ptr<ServingModel> scripted_model(std::chrono::milliseconds step_delay) {
  serving::ModelFiles files = serving::read_model_files(shipped_model_dir());
  auto m = std::make_shared<ServingModel>(files.tokenizer);
  m->root = files.dir.string();
  m->chat_template = files.chat_template;
  m->chat_template_error = files.chat_template_error;
  m->defaults = files.defaults;
  m->max_model_len = files.config.max_position_embeddings;
  m->generator = std::make_unique<ScriptedGenerator>(files.tokenizer, *files.tokenizer.token_to_id("<|im_end|>"),
                                                     step_delay);
  return m;
}

TestServer::TestServer(std::shared_ptr<ServingModel> m, ServerOptions options) : model(std::move(m)) {
  std::signal(SIGPIPE, SIG_IGN);  // as `serve` does: a vanished client must not kill the process
  options.host = "127.0.0.1";
  options.port = 0;
  if (options.served_model_name.empty()) options.served_model_name = "tiny";
  server = std::make_unique<HttpServer>(options);
  port = server->start();
  if (model) server->set_ready(model);
}

TestServer::~TestServer() { server->shutdown(std::chrono::seconds(0)); }

nlohmann::json HttpReply::json() const {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << body;
  return j;
}

namespace {

HttpReply to_reply(const httplib::Result& r) {
  HttpReply out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.content_type = r->get_header_value("Content-Type");
  return out;
}

httplib::Headers to_headers(const std::map<std::string, std::string>& headers) {
  httplib::Headers h;
  for (const auto& [k, v] : headers) h.emplace(k, v);
  return h;
}

}  // namespace

HttpReply http_get(int port, const std::string& path, const std::map<std::string, std::string>& headers) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  return to_reply(c.Get(path, to_headers(headers)));
}

HttpReply http_post(int port, const std::string& path, const std::string& body,
                    const std::map<std::string, std::string>& headers) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  return to_reply(c.Post(path, to_headers(headers), body, "application/json"));
}

HttpReply http_post(int port, const std::string& path, const nlohmann::json& body,
                    const std::map<std::string, std::string>& headers) {
  return http_post(port, path, body.dump(), headers);
}

std::vector<nlohmann::json> sse_events(const std::string& body) {
  std::vector<nlohmann::json> events;
  bool done = false;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "an event does not end in a blank line: " << body.substr(pos);
      break;
    }
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    EXPECT_FALSE(done) << "an event after [DONE]: " << event;
    if (event.rfind("data: ", 0) != 0 || event.find('\n') != std::string::npos) {
      ADD_FAILURE() << "not a one-line data event: " << event;
      continue;
    }
    const std::string data = event.substr(6);
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    events.push_back(nlohmann::json::parse(data, nullptr, false));
    EXPECT_FALSE(events.back().is_discarded()) << "not JSON: " << data;
  }
  EXPECT_TRUE(done) << "no data: [DONE] at the end of " << body;
  return events;
}

RawConnection::RawConnection(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) ADD_FAILURE() << "cannot connect to " << port;
}

RawConnection::~RawConnection() { close(); }

void RawConnection::send_post(const std::string& path, const std::string& body) {
  const std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd_, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
}

bool RawConnection::read_until(const std::string& needle, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (received_.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    received_.append(buf, static_cast<size_t>(n));
  }
  return true;
}

void RawConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace flashdraft::server::test
