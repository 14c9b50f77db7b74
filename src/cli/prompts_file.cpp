#include "cli/prompts_file.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace flashdraft::cli {

std::vector<PromptEntry> read_prompts_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("--prompts-file {}: cannot open the file", path.string()));
  std::vector<PromptEntry> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("--prompts-file {} line {}", path.string(), number);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw UsageError(fmt::format("{}: not valid JSON ({})", where, e.what()));
    }
    if (!j.is_object()) throw UsageError(fmt::format("{}: expected a JSON object with a \"prompt\" string", where));
    auto prompt = j.find("prompt");
    if (prompt == j.end() || !prompt->is_string()) {
      throw UsageError(fmt::format("{}: expected a \"prompt\" string (HumanEval format)", where));
    }
    PromptEntry e;
    e.prompt = prompt->get<std::string>();
    auto task = j.find("task_id");
    e.name = task != j.end() && task->is_string() ? task->get<std::string>() : fmt::format("line {}", number);
    out.push_back(std::move(e));
  }
  if (out.empty()) throw UsageError(fmt::format("--prompts-file {}: no prompts in the file", path.string()));
  return out;
}

}  // namespace flashdraft::cli
