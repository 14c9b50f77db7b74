#pragma once
// The prompts a run sends. Named sets are the DFlash literature's, read from
// the JSONL files in ../shared/datasets and formatted as its benchmarks do:
//   humaneval  humaneval.jsonl   "Write a solution to the following problem and
//                                 make sure that it passes the tests:" + the
//                                 `prompt` field in a ```python fence
//   gsm8k      gsm8k_test.jsonl  the `question` + "Please reason step by step,
//                                 and put your final answer within \boxed{}."
//   mt-bench   mt_bench.jsonl    the first of `turns` (later turns need the
//                                 model's own answers)
// jsonl:PATH reads any file, one JSON object a line: `prompt` (a string) or
// `turns` (strings; the first is sent), and optionally `max_tokens` (an
// integer overriding --max-tokens for that request). Blank lines are skipped.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flashdraft::bench_serve {

struct BenchPrompt {
  std::string text;
  std::optional<int64_t> max_tokens;
};

// The names accepted besides jsonl:PATH, for messages and --help.
const std::vector<std::string>& dataset_names();

// Where the named sets are looked for when no --dataset-dir is given:
// ../shared/datasets from the working directory, then beside the source tree.
std::vector<std::string> default_dataset_dirs();

// spec: a name or jsonl:PATH. dataset_dir empty: the first of
// default_dataset_dirs() holding the file. Throws UsageError for an unknown
// name, a missing file, or a line that is not a usable prompt (naming the
// file and line).
std::vector<BenchPrompt> load_dataset(const std::string& spec, const std::string& dataset_dir);

// The first `count` prompts, going round again when the set is smaller.
std::vector<BenchPrompt> take_prompts(const std::vector<BenchPrompt>& all, size_t count);

}  // namespace flashdraft::bench_serve
