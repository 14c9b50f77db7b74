#include "bench_serve/sse_parser.h"

namespace flashdraft::bench_serve {

void SseParser::feed(std::string_view bytes, std::vector<SseEvent>& out) {
  if (bytes.empty()) return;
  size_t at = 0;
  if (after_cr_ && bytes[0] == '\n') at = 1;
  after_cr_ = false;
  while (at < bytes.size()) {
    const size_t end = bytes.find_first_of("\r\n", at);
    if (end == std::string_view::npos) {
      partial_.append(bytes.substr(at));
      return;
    }
    if (partial_.empty()) {
      line(bytes.substr(at, end - at), out);
    } else {
      partial_.append(bytes.substr(at, end - at));
      std::string whole = std::move(partial_);
      partial_.clear();
      line(whole, out);
    }
    at = end + 1;
    if (bytes[end] == '\r') {
      if (at == bytes.size()) after_cr_ = true;
      else if (bytes[at] == '\n') ++at;
    }
  }
}

void SseParser::finish(std::vector<SseEvent>& out) {
  if (!partial_.empty()) {
    std::string last = std::move(partial_);
    partial_.clear();
    line(last, out);
  }
  dispatch(out);
}

void SseParser::line(std::string_view text, std::vector<SseEvent>& out) {
  if (text.empty()) return dispatch(out);
  if (text[0] == ':') return;  // comment (keep-alive pings)
  const size_t colon = text.find(':');
  std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_ = value;
  }
  // id and retry matter to browsers reconnecting, not to a benchmark.
}

void SseParser::dispatch(std::vector<SseEvent>& out) {
  if (has_data_) out.push_back({std::move(event_), std::move(data_)});
  event_.clear();
  data_.clear();
  has_data_ = false;
}

}  // namespace flashdraft::bench_serve
