#pragma once
// Runs the built `flashdraft` binary the way a user would and captures what
// it printed, so end-to-end tests check exit codes and exact output.
#include <string>
#include <vector>

namespace flashdraft::cli::test {

struct Ran {
  int exit_code = -1;
  std::string out, err;
  // stderr split into lines (no trailing empty line).
  std::vector<std::string> err_lines() const;
};

// Runs FD_FLASHDRAFT_BIN with `args`; stdin is /dev/null.
Ran run_flashdraft(const std::vector<std::string>& args);

}  // namespace flashdraft::cli::test
