#pragma once
// `flashdraft bench serve`: load any OpenAI-compatible server (flashdraft
// serve, vLLM, SGLang, llama.cpp) with a dataset's prompts and report
// throughput, TTFT / TPOT / ITL / end-to-end latency and, from the server's
// /metrics, speculative-decoding acceptance. Flags as `vllm bench serve`
// spells them.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace flashdraft::cli {

struct BenchServeOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string dataset = "humaneval";
  std::string dataset_dir;
  int64_t num_prompts = 0;  // 0: every prompt of the dataset once
  int64_t max_concurrency = 0;
  std::string request_rate = "inf";
  int64_t max_tokens = 128;
  std::string endpoint = "completions";
  int64_t seed = 0;
  std::string model;
  std::string api_key;
  double temperature = 0;
  bool ignore_eos = false;
  std::string extra_body;
  double timeout = 600;
  std::string output_json;
};

// Adds `bench` with its `serve` subcommand; returns `bench serve`.
CLI::App* add_bench_serve_command(CLI::App& app, BenchServeOptions& options);
// Prints the table on stdout; throws UsageError / Error (server unreachable,
// every request failed).
void run_bench_serve(const BenchServeOptions& options);

}  // namespace flashdraft::cli
