#pragma once
// Server-sent events as the WHATWG spec frames them: `field: value` lines,
// an empty line ends an event, `:` starts a comment, several `data:` lines
// join with '\n'. Bytes arrive in arbitrary pieces (a TCP read may end in the
// middle of a line, or between the '\r' and '\n' of a CRLF).
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::bench_serve {

struct SseEvent {
  std::string event;  // the `event:` field; empty means "message"
  std::string data;
};

class SseParser {
 public:
  // Appends the events completed by `bytes` to `out`.
  void feed(std::string_view bytes, std::vector<SseEvent>& out);
  // End of stream: an event whose closing empty line never came is still
  // delivered (lenient towards servers that omit it).
  void finish(std::vector<SseEvent>& out);

 private:
  void line(std::string_view text, std::vector<SseEvent>& out);
  void dispatch(std::vector<SseEvent>& out);

  std::string partial_;  // bytes of a line not yet ended
  bool after_cr_ = false;  // the last byte was '\r': a '\n' next belongs to it
  std::string event_, data_;
  bool has_data_ = false;
};

}  // namespace flashdraft::bench_serve
