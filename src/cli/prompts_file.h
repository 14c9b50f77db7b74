#pragma once
// Prompts for batch generation: a jsonl file, one JSON object per line with a
// "prompt" string (HumanEval's format; "task_id" is kept as the name when
// present). Blank lines are skipped.
#include <filesystem>
#include <string>
#include <vector>

namespace flashdraft::cli {

struct PromptEntry {
  std::string name;  // task_id, else "line N"
  std::string prompt;
};

// Throws UsageError naming the file and line when the file cannot be read, a
// line is not a JSON object with a string "prompt", or there is no prompt.
std::vector<PromptEntry> read_prompts_file(const std::filesystem::path& path);

}  // namespace flashdraft::cli
