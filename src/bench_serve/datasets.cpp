#include "bench_serve/datasets.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace flashdraft::bench_serve {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct NamedSet {
  std::string name, file;
  const char* field;  // what each line must hold, for the error message
  // The prompt of one line, or nullopt when the line lacks the field.
  std::optional<std::string> (*prompt)(const json& line);
};

std::optional<std::string> string_field(const json& line, const char* key) {
  auto it = line.find(key);
  if (it == line.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::string> first_turn(const json& line) {
  auto it = line.find("turns");
  if (it == line.end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) return std::nullopt;
  return (*it)[0].get<std::string>();
}

std::optional<std::string> humaneval_prompt(const json& line) {
  auto code = string_field(line, "prompt");
  if (!code) return std::nullopt;
  return "Write a solution to the following problem and make sure that it passes the tests:\n```python\n" + *code +
         "\n```";
}

std::optional<std::string> gsm8k_prompt(const json& line) {
  auto question = string_field(line, "question");
  if (!question) return std::nullopt;
  return *question + "\nPlease reason step by step, and put your final answer within \\boxed{}.";
}

std::optional<std::string> jsonl_prompt(const json& line) {
  if (auto p = string_field(line, "prompt")) return p;
  return first_turn(line);
}

const std::vector<NamedSet>& named_sets() {
  static const std::vector<NamedSet> sets = {
      {"humaneval", "humaneval.jsonl", "\"prompt\" string", humaneval_prompt},
      {"gsm8k", "gsm8k_test.jsonl", "\"question\" string", gsm8k_prompt},
      {"mt-bench", "mt_bench.jsonl", "\"turns\" list of strings", first_turn},
  };
  return sets;
}

std::vector<BenchPrompt> read_jsonl(const std::string& path, const char* expected,
                                    std::optional<std::string> (*prompt)(const json&)) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UsageError(fmt::format("--dataset: {} is not a file", path));
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("--dataset: cannot open {}", path));
  std::vector<BenchPrompt> out;
  std::string text;
  for (size_t line_no = 1; std::getline(in, text); ++line_no) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (line.is_discarded() || !line.is_object())
      throw UsageError(fmt::format("--dataset: {} line {}: not a JSON object", path, line_no));
    auto p = prompt(line);
    if (!p) throw UsageError(fmt::format("--dataset: {} line {}: no {}", path, line_no, expected));
    BenchPrompt bp{std::move(*p), std::nullopt};
    if (auto m = line.find("max_tokens"); m != line.end()) {
      if (!m->is_number_integer() || m->get<int64_t>() < 1)
        throw UsageError(fmt::format("--dataset: {} line {}: max_tokens must be a positive integer", path, line_no));
      bp.max_tokens = m->get<int64_t>();
    }
    out.push_back(std::move(bp));
  }
  if (out.empty()) throw UsageError(fmt::format("--dataset: {} holds no prompts", path));
  return out;
}

}  // namespace

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& s : named_sets()) n.push_back(s.name);
    return n;
  }();
  return names;
}

std::vector<std::string> default_dataset_dirs() {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  std::vector<std::string> dirs;
  if (!ec) dirs.push_back((cwd / ".." / "shared" / "datasets").lexically_normal().string());
  const std::string beside_source = (fs::path(FD_SOURCE_DIR) / ".." / "shared" / "datasets").lexically_normal().string();
  if (dirs.empty() || dirs[0] != beside_source) dirs.push_back(beside_source);
  return dirs;
}

std::vector<BenchPrompt> load_dataset(const std::string& spec, const std::string& dataset_dir) {
  constexpr std::string_view kJsonl = "jsonl:";
  if (spec.rfind(kJsonl, 0) == 0) {
    const std::string path = spec.substr(kJsonl.size());
    if (path.empty()) throw UsageError("--dataset jsonl:PATH needs a path after 'jsonl:'");
    return read_jsonl(path, "\"prompt\" string or \"turns\" list of strings", jsonl_prompt);
  }
  for (const NamedSet& set : named_sets()) {
    if (set.name != spec) continue;
    std::vector<std::string> dirs = dataset_dir.empty() ? default_dataset_dirs() : std::vector{dataset_dir};
    for (const std::string& dir : dirs) {
      const std::string path = (fs::path(dir) / set.file).string();
      if (!fs::exists(path)) continue;
      return read_jsonl(path, set.field, set.prompt);
    }
    throw UsageError(fmt::format("--dataset {}: {} not found in {}; pass --dataset-dir DIR or --dataset jsonl:PATH",
                                 spec, set.file, fmt::join(dirs, " or ")));
  }
  throw UsageError(fmt::format("--dataset: unknown dataset '{}'; expected {} or jsonl:PATH", spec,
                               fmt::join(dataset_names(), ", ")));
}

std::vector<BenchPrompt> take_prompts(const std::vector<BenchPrompt>& all, size_t count) {
  std::vector<BenchPrompt> out;
  out.reserve(count);
  for (size_t i = 0; i < count && !all.empty(); ++i) out.push_back(all[i % all.size()]);
  return out;
}

}  // namespace flashdraft::bench_serve
