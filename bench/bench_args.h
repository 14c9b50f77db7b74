#pragma once
// The command lines of the plain bench programs (bench_step, bench_cycle,
// bench_dflash, bench_adaptive): "--flag value" pairs, lists written
// "1,8,32". One reader, so they all spell and report flags alike.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::bench {

// "none,fp8" -> {"none", "fp8"}.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

// "1,8,32" -> {1, 8, 32}. Throws std::invalid_argument / std::out_of_range on a bad number.
inline std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  for (const std::string& item : split_list(s)) out.push_back(std::stoll(item));
  return out;
}

// Calls on_flag(flag, value) for each flag of argv, in order; a flag named
// in `switches` takes no value (value ""). on_flag returns false for a flag
// it does not know. False, after saying why on stderr as "PROGRAM: ...",
// for an unknown flag or one missing its value.
inline bool parse_flags(const char* program, int argc, char** argv,
                        const std::function<bool(const std::string& flag, const std::string& value)>& on_flag,
                        std::initializer_list<std::string_view> switches = {}) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    bool is_switch = false;
    for (std::string_view s : switches) is_switch = is_switch || flag == s;
    if (!is_switch && i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value\n", program, flag.c_str());
      return false;
    }
    const std::string value = is_switch ? std::string() : std::string(argv[++i]);
    if (!on_flag(flag, value)) {
      std::fprintf(stderr, "%s: unknown flag %s\n", program, flag.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace flashdraft::bench
