#include "chat/py_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/py_str.h"

namespace flashdraft::chat::py {
namespace {

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  auto escape_unit = [&](unsigned unit) {
    std::snprintf(buf, sizeof buf, "\\u%04x", unit);
    out += buf;
  };
  for (char32_t cp : decode_utf8(s)) {
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20) {
          escape_unit(static_cast<unsigned>(cp));
        } else if (ensure_ascii && cp > 0x7E) {
          if (cp >= 0x10000) {
            const char32_t v = cp - 0x10000;
            escape_unit(0xD800 | static_cast<unsigned>(v >> 10));
            escape_unit(0xDC00 | static_cast<unsigned>(v & 0x3FF));
          } else {
            escape_unit(static_cast<unsigned>(cp));
          }
        } else {
          append_utf8(out, cp);
        }
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const DumpsOptions& o)
      : o_(o),
        item_sep_(o.item_separator ? *o.item_separator : (o.indent ? "," : ", ")),
        key_sep_(o.key_separator ? *o.key_separator : ": ") {}

  void dump(const Json& j, int depth) {
    switch (j.type()) {
      case Json::value_t::null: out += "null"; return;
      case Json::value_t::boolean: out += j.get<bool>() ? "true" : "false"; return;
      case Json::value_t::number_integer: out += std::to_string(j.get<int64_t>()); return;
      case Json::value_t::number_unsigned: out += std::to_string(j.get<uint64_t>()); return;
      case Json::value_t::number_float: out += float_json(j.get<double>()); return;
      case Json::value_t::string: dump_string(out, j.get_ref<const std::string&>(), o_.ensure_ascii); return;
      case Json::value_t::array: dump_array(j, depth); return;
      case Json::value_t::object: dump_object(j, depth); return;
      default: out += "null"; return;
    }
  }

  std::string out;

 private:
  void newline(int depth) {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *o_.indent;
  }

  void dump_array(const Json& j, int depth) {
    if (j.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    bool first = true;
    for (const auto& e : j) {
      if (!first) out += item_sep_;
      first = false;
      newline(depth + 1);
      dump(e, depth + 1);
    }
    newline(depth);
    out += ']';
  }

  void dump_object(const Json& j, int depth) {
    if (j.empty()) {
      out += "{}";
      return;
    }
    std::vector<Json::const_iterator> items;
    for (auto it = j.begin(); it != j.end(); ++it) items.push_back(it);
    if (o_.sort_keys)
      std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.key() < b.key(); });
    out += '{';
    bool first = true;
    for (const auto& it : items) {
      if (!first) out += item_sep_;
      first = false;
      newline(depth + 1);
      dump_string(out, it.key(), o_.ensure_ascii);
      out += key_sep_;
      dump(it.value(), depth + 1);
    }
    newline(depth);
    out += '}';
  }

  const DumpsOptions& o_;
  std::string item_sep_;
  std::string key_sep_;
};

}  // namespace

std::string json_dumps(const Json& j, const DumpsOptions& options) {
  Dumper d(options);
  d.dump(j, 0);
  return std::move(d.out);
}

}  // namespace flashdraft::chat::py
