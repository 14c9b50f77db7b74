#include "bench_serve/load_runner.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bench_serve/arrivals.h"
#include "bench_serve/http_client.h"
#include "bench_serve/request_body.h"
#include "bench_serve/server_probe.h"
#include "bench_serve/stream_recorder.h"

namespace flashdraft::bench_serve {
namespace {

constexpr auto kProgressInterval = std::chrono::milliseconds(100);

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

BenchRun run_benchmark(const BenchConfig& config, const ProgressFn& progress) {
  const size_t n = config.prompts.size();
  BenchRun run;
  run.results.resize(n);
  std::vector<std::string> bodies;
  bodies.reserve(n);
  for (const BenchPrompt& p : config.prompts) bodies.push_back(request_body(config, p));
  const std::vector<double> arrivals = arrival_times(n, config.request_rate, config.seed);
  const size_t workers =
      config.max_concurrency > 0 ? std::min(n, static_cast<size_t>(config.max_concurrency)) : n;

  const SpecScrape before = scrape_spec_counters(config.client);

  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable changed;
  size_t done = 0, failed = 0;
  const Clock::time_point start = Clock::now();
  // A worker takes the prompts in order, so a request starts at its arrival
  // time or when an earlier one frees its slot, whichever is later.
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(arrivals[i])));
      const double sent_at = seconds_since(start);
      RequestResult r;
      try {
        r = stream_request(config.client, route_of(config.endpoint), bodies[i]);
      } catch (const std::exception& e) {  // a thread must not die of it: the run goes on
        r.error = std::string("internal error: ") + e.what();
      }
      r.sent_at = sent_at;
      std::lock_guard lock(mu);
      failed += r.ok ? 0 : 1;
      run.results[i] = std::move(r);
      ++done;
      changed.notify_all();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(work);
  for (bool all_done = n == 0; !all_done;) {
    size_t now_done = 0, now_failed = 0;
    {
      std::unique_lock lock(mu);
      changed.wait_for(lock, kProgressInterval, [&] { return done == n; });
      now_done = done;
      now_failed = failed;
    }
    all_done = now_done == n;
    if (progress) progress(now_done, now_failed, seconds_since(start));
  }
  for (std::thread& t : threads) t.join();
  run.duration = seconds_since(start);

  const SpecScrape after = scrape_spec_counters(config.client);
  if (before.counters && after.counters) {
    run.spec = spec_decode_delta(*before.counters, *after.counters);
    if (!run.spec) run.spec_note = "no drafts were made during the run";
  } else {
    run.spec_note = !before.note.empty() ? before.note : after.note;
  }
  return run;
}

}  // namespace flashdraft::bench_serve
