#pragma once
// Writing generated text to stdout exactly as produced: pipes get the bytes
// unchanged, and a terminal additionally gets a final newline so the shell
// prompt does not land on the text's last line.
#include <string_view>

namespace flashdraft::cli {

bool stdout_is_terminal();
bool stderr_is_terminal();
// Writes and flushes, so streamed text appears as it is generated.
void write_text(std::string_view text);
// Ends the line on a terminal when the text written did not.
void end_line_on_terminal(std::string_view last_text);

}  // namespace flashdraft::cli
