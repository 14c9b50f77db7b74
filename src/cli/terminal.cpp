#include "cli/terminal.h"

#include <unistd.h>

#include <cstdio>

namespace flashdraft::cli {

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) != 0; }
bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

void write_text(std::string_view text) {
  if (text.empty()) return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void end_line_on_terminal(std::string_view last_text) {
  if (stdout_is_terminal() && (last_text.empty() || last_text.back() != '\n')) write_text("\n");
}

}  // namespace flashdraft::cli
