// bench serve against the real `flashdraft serve` on the shipped pair
// (models/target + models/drafter-full, CPU), both run as a user runs them:
// the server in the background, the benchmark to completion, its JSON read.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "../cli/subprocess.h"

namespace flashdraft::bench_serve {
namespace {

using cli::test::run_flashdraft;

// `flashdraft serve --port 0` in the background; the port is read from its
// "listening on" line, readiness from its "ready;" line.
class BackgroundServer {
 public:
  explicit BackgroundServer(const std::vector<std::string>& args) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return;
    std::vector<std::string> argv_strings = {FD_FLASHDRAFT_BIN};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(pipe_fds[1], 2);
      close(pipe_fds[0]);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(pipe_fds[1]);
    err_ = fdopen(pipe_fds[0], "r");
  }

  ~BackgroundServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (err_) std::fclose(err_);
  }

  // Reads stderr until the server is ready; the base URL, or "" if it exited.
  std::string wait_ready() {
    static const std::regex listening("listening on (http://[0-9.]+:[0-9]+)");
    std::string base_url;
    char line[4096];
    while (err_ && std::fgets(line, sizeof line, err_)) {
      log_ += line;
      std::cmatch m;
      if (std::regex_search(line, m, listening)) base_url = m[1];
      if (std::string(line).find("ready;") != std::string::npos) return base_url;
    }
    return "";
  }

  // SIGTERM, then the exit code (the server stops gracefully).
  int stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  std::FILE* err_ = nullptr;
  std::string log_;
};

TEST(BenchServeShipped, AcceptanceFromMetrics) {
  const std::string models = FD_SOURCE_DIR "/models";
  BackgroundServer server({"serve", "--model", models + "/target", "--speculative-config",
                           R"({"method":"dflash","model":")" + models + R"(/drafter-full","adaptive":false})", "--port", "0",
                           "--device", "cpu"});
  const std::string base_url = server.wait_ready();
  ASSERT_FALSE(base_url.empty()) << "the server did not come up:\n" << server.log();

  const int prompts = 4, max_tokens = 24;
  const std::string json_path = FD_BENCH_WORK_DIR "/shipped.json";
  std::remove(json_path.c_str());
  const auto ran = run_flashdraft({"bench", "serve", "--base-url", base_url, "--dataset", "humaneval", "--dataset-dir",
                                   FD_FIXTURES_DIR "/engine", "--num-prompts", std::to_string(prompts),
                                   "--max-tokens", std::to_string(max_tokens), "--max-concurrency", "2",
                                   "--ignore-eos", "--output-json", json_path});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_NE(ran.out.find("Acceptance length"), std::string::npos) << ran.out;
  std::ifstream in(json_path);
  ASSERT_TRUE(in) << json_path;
  const nlohmann::json j = nlohmann::json::parse(in);

  EXPECT_EQ(j["completed"], prompts);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["requests_without_usage"], 0);
  EXPECT_EQ(j["total_output_tokens"], prompts * max_tokens);  // ignore_eos: every request runs to max_tokens
  EXPECT_GT(j["mean_ttft_ms"].get<double>(), 0);
  EXPECT_GT(j["mean_tpot_ms"].get<double>(), 0);
  ASSERT_TRUE(j["spec_decode"].is_object()) << j.dump(2);
  const auto& spec = j["spec_decode"];
  const int64_t drafts = spec["num_drafts"], draft_tokens = spec["num_draft_tokens"];
  EXPECT_GT(drafts, 0);
  // drafter-full proposes up to block_size - 1 = 15 tokens a step.
  EXPECT_LE(draft_tokens, 15 * drafts);
  EXPECT_GT(draft_tokens, drafts);
  // Each request's first token comes from prefill, each draft step adds at
  // least one: the counters read belong to this run's requests.
  EXPECT_GE(prompts * max_tokens, prompts + drafts);
  const double length = spec["acceptance_length"];
  EXPECT_GT(length, 1.0);
  EXPECT_LE(length, 16.0);
  EXPECT_EQ(spec["acceptance_rate_per_position"].size(), 15u);

  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace flashdraft::bench_serve
