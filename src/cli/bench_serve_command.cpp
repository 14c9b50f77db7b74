#include "cli/bench_serve_command.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bench_serve/base_url.h"
#include "bench_serve/bench_config.h"
#include "bench_serve/datasets.h"
#include "bench_serve/http_client.h"
#include "bench_serve/load_runner.h"
#include "bench_serve/progress_bar.h"
#include "bench_serve/run_report.h"
#include "bench_serve/server_probe.h"
#include "cli/terminal.h"
#include "core/error.h"

namespace flashdraft::cli {
namespace {

namespace bs = bench_serve;

double parse_rate(const std::string& text) {
  if (text == "inf" || text == "Inf" || text == "INF") return INFINITY;
  double rate = 0;
  size_t used = 0;
  try {
    rate = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(rate > 0) || std::isnan(rate))
    throw UsageError(fmt::format("--request-rate: expected requests per second > 0 or 'inf', got '{}'", text));
  return rate;
}

nlohmann::json parse_extra_body(const std::string& text) {
  if (text.empty()) return nullptr;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw UsageError(fmt::format("--extra-body: expected a JSON object, got '{}'", text));
  return j;
}

void check_output_dir(const std::string& path) {
  if (path.empty()) return;
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError(fmt::format("--output-json {}: no directory {}", path, dir.string()));
}

bs::BenchConfig make_config(const BenchServeOptions& o) {
  bs::BenchConfig c;
  c.client.server = bs::parse_base_url(o.base_url);
  c.client.api_key = o.api_key;
  c.client.timeout = o.timeout;
  c.endpoint = o.endpoint == "chat" ? bs::Endpoint::chat : bs::Endpoint::completions;
  c.dataset = o.dataset;
  c.max_tokens = o.max_tokens;
  c.temperature = o.temperature;
  c.ignore_eos = o.ignore_eos;
  c.extra_body = parse_extra_body(o.extra_body);
  c.max_concurrency = o.max_concurrency;
  c.request_rate = parse_rate(o.request_rate);
  c.seed = static_cast<uint64_t>(o.seed);
  check_output_dir(o.output_json);  // before the run, not after it
  // Prompts last: the flags above are checked before any file is read.
  const std::vector<bs::BenchPrompt> all = bs::load_dataset(o.dataset, o.dataset_dir);
  const size_t count = o.num_prompts > 0 ? static_cast<size_t>(o.num_prompts) : all.size();
  if (count > all.size())
    fmt::print(stderr, "bench serve: {} has {} prompts; sending them again in order to reach {}\n", o.dataset,
               all.size(), count);
  c.prompts = bs::take_prompts(all, count);
  return c;
}

void write_json(const std::string& path, const nlohmann::ordered_json& j) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(fmt::format("--output-json {}: cannot write the file", path));
  // Error messages quote server bytes, which need not be valid UTF-8.
  out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  if (!out.flush()) throw Error(fmt::format("--output-json {}: writing failed", path));
}

}  // namespace

CLI::App* add_bench_serve_command(CLI::App& app, BenchServeOptions& o) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (see 'flashdraft bench serve --help')");
  bench->require_subcommand(1, 1);
  CLI::App* cmd = bench->add_subcommand(
      "serve",
      "Load an OpenAI-compatible server (flashdraft serve, vLLM, SGLang, llama.cpp) with a dataset's prompts, "
      "streamed; report throughput, TTFT, TPOT, ITL, end-to-end latency and, from the server's /metrics (vLLM's "
      "names), speculative-decoding acceptance");
  cmd->add_option("--base-url", o.base_url, "Server address; a trailing /v1 is accepted")
      ->type_name("URL")
      ->capture_default_str();
  cmd->add_option("--dataset", o.dataset,
                  "humaneval, gsm8k or mt-bench (from ../shared/datasets, formatted as the DFlash papers' "
                  "benchmarks do), or jsonl:PATH: one JSON object a line with \"prompt\" (a string) or \"turns\" "
                  "(strings; the first is sent), optional \"max_tokens\"")
      ->type_name("NAME")
      ->capture_default_str();
  cmd->add_option("--dataset-dir", o.dataset_dir,
                  "Directory of the named datasets (default: ../shared/datasets from here or beside the sources)")
      ->type_name("DIR");
  cmd->add_option("--num-prompts", o.num_prompts,
                  "Requests to send: the dataset's first N prompts, going round again if it has fewer "
                  "(default: all of them once)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-concurrency", o.max_concurrency, "Requests in flight at most (default: no limit)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--request-rate", o.request_rate,
                  "Requests per second, sent as a Poisson process (seeded by --seed); inf sends all at once")
      ->type_name("RATE")
      ->capture_default_str();
  cmd->add_option("--max-tokens", o.max_tokens, "max_tokens of each request (a jsonl line may set its own)")
      ->type_name("N")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--endpoint", o.endpoint,
                  "completions (/v1/completions, the prompt as text) or chat (/v1/chat/completions, the prompt "
                  "as one user message in the server's chat template)")
      ->check(CLI::IsMember({"completions", "chat"}))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the arrival times")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--model", o.model, "Model name sent in each request (default: the first id of GET /v1/models)")
      ->type_name("NAME");
  cmd->add_option("--api-key", o.api_key, "Sent as 'Authorization: Bearer KEY'")
      ->type_name("KEY")
      ->envname("OPENAI_API_KEY");
  cmd->add_option("--temperature", o.temperature, "Sampling temperature of each request (0: greedy)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", o.ignore_eos,
                "Send ignore_eos: true (vLLM's extension) so every request generates max_tokens tokens");
  cmd->add_option("--extra-body", o.extra_body,
                  "JSON object merged into every request body, e.g. "
                  "'{\"chat_template_kwargs\": {\"enable_thinking\": false}}'")
      ->type_name("JSON");
  cmd->add_option("--timeout", o.timeout, "Seconds without a byte from the server before a request fails")
      ->type_name("SECONDS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--output-json", o.output_json, "Also write the results (summary and every request) as JSON")
      ->type_name("PATH");
  return cmd;
}

void run_bench_serve(const BenchServeOptions& options) {
  if (!bs::http_client_available())
    throw Error("this build has no HTTP client: cpp-httplib was not found when it was configured "
                "(apt-get install libcpp-httplib-dev, then rebuild)");
  bs::BenchConfig config = make_config(options);
  config.model = bs::probe_server(config.client, options.model);
  fmt::print(stderr, "bench serve: {} requests ({}) to {}, model {}\n", config.prompts.size(), config.dataset,
             config.client.server.url(bs::route_of(config.endpoint)), config.model);

  bs::ProgressBar bar(stderr, stderr_is_terminal(), config.prompts.size());
  const bs::BenchRun run =
      bs::run_benchmark(config, [&](size_t done, size_t failed, double s) { bar.update(done, failed, s); });
  bar.clear();

  const bs::RunSummary summary = bs::summarize_run(run);
  write_text(bs::format_report(config, run, summary));
  if (!options.output_json.empty()) {
    write_json(options.output_json, bs::report_json(config, run, summary));
    fmt::print(stderr, "bench serve: wrote {}\n", options.output_json);
  }
  if (summary.completed == 0 && summary.failed > 0)
    throw Error(fmt::format("every request failed; the first error: {}", run.results.front().error));
}

}  // namespace flashdraft::cli
