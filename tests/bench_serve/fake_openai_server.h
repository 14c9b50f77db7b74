#pragma once
// A tiny OpenAI-compatible server (cpp-httplib) for bench serve's end-to-end
// tests: streams canned chunks with set delays, serves /v1/models and a
// /metrics whose spec-decode counters grow by known amounts per request, and
// fails on cue (prompt "FAIL" -> HTTP 500, "STREAM_ERROR" -> an error event).
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace flashdraft::bench_serve::test {

struct FakeScript {
  int chunks = 4;                  // content chunks per request
  int tokens_per_chunk = 3;        // as a speculative decoder would emit them
  std::chrono::milliseconds first_delay{40}, gap{20};
  bool send_usage = true;
  std::string api_key;             // required when not empty
};

class FakeOpenAiServer {
 public:
  explicit FakeOpenAiServer(FakeScript script);
  ~FakeOpenAiServer();
  std::string base_url() const;
  int max_in_flight() const { return max_in_flight_.load(); }
  std::vector<std::string> bodies() const;  // every generation request received

 private:
  FakeScript script_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> in_flight_{0}, max_in_flight_{0};
  mutable std::mutex mu_;
  std::vector<std::string> bodies_;
  double drafts_ = 0, accepted_ = 0;  // under mu_
};

}  // namespace flashdraft::bench_serve::test
