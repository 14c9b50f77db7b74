// Rendering speed of the Qwen3 chat template on synthetic conversations of
// growing length (user turns, assistant turns with <think> blocks and tool
// calls, tool responses), reported as rendered bytes per second.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "chat/chat_template.h"

namespace {

using Json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Json conversation(int turns) {
  Json messages = Json::array();
  messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
  const std::string filler(400, 'x');
  for (int i = 0; i < turns; ++i) {
    const std::string n = std::to_string(i);
    messages.push_back({{"role", "user"}, {"content", std::string("Question ").append(n).append(" ").append(filler)}});
    Json call = {{"type", "function"},
                 {"function", {{"name", "search"}, {"arguments", {{"query", std::string("q").append(n)}, {"top_k", 3}}}}}};
    messages.push_back({{"role", "assistant"},
                        {"content", "<think>\nreasoning " + filler + "\n</think>\n\nLet me search."},
                        {"tool_calls", Json::array({call})}});
    messages.push_back({{"role", "tool"}, {"content", "result " + filler}});
    messages.push_back({{"role", "assistant"}, {"content", std::string("Answer ").append(n).append(" ").append(filler)}});
  }
  return messages;
}

void BM_Qwen3Render(benchmark::State& state) {
  const auto tmpl = flashdraft::chat::ChatTemplate::parse(
      read_file(std::string(FD_FIXTURES_DIR) + "/chat/qwen3_chat_template.jinja"));
  const Json messages = conversation(static_cast<int>(state.range(0)));
  flashdraft::chat::ChatOptions options;
  options.tools = Json::array({{{"type", "function"}, {"function", {{"name", "search"}, {"parameters", Json::object()}}}}});
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string out = flashdraft::chat::apply_chat_template(tmpl, messages, options);
    bytes += out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Qwen3Render)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_Qwen3Parse(benchmark::State& state) {
  const std::string source = read_file(std::string(FD_FIXTURES_DIR) + "/chat/qwen3_chat_template.jinja");
  for (auto _ : state) benchmark::DoNotOptimize(flashdraft::chat::ChatTemplate::parse(source));
}
BENCHMARK(BM_Qwen3Parse)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
