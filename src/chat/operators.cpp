// Arithmetic, comparison and membership with Python semantics.
#include "chat/builtin_support.h"

#include <algorithm>
#include <cmath>

namespace flashdraft::chat {

using namespace detail;

Value negate(const Value& v, bool minus) {
  if (v.is_undefined()) fail_undefined(v);
  if (!is_num(v)) type_error(std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" + type_name(v) + "'");
  if (is_int(v)) return int_value(minus ? -static_cast<__int128>(as_int(v)) : as_int(v));
  return Value(Json(minus ? -as_double(v) : as_double(v)));
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "%" && is_str(a)) type_error("unsupported printf-style string formatting ('%')");
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  auto unsupported = [&]() -> Value {
    type_error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  };
  if (op == "+") {
    if (is_str(a) && is_str(b)) {
      if (a.is_markup() || b.is_markup())
        return Value::markup((a.is_markup() ? str(a) : html_escape(str(a))) + (b.is_markup() ? str(b) : html_escape(str(b))));
      return Value(Json(str(a) + str(b)));
    }
    if (is_list(a) && is_list(b)) {
      Json out = a.json();
      for (const auto& e : b.json()) out.push_back(e);
      return Value(std::move(out));
    }
  }
  if (op == "*" && (((is_str(a) || is_list(a)) && is_int(b)) || ((is_str(b) || is_list(b)) && is_int(a)))) {
    const Value& seq = is_int(b) && !is_int(a) ? a : b;
    const int64_t n = std::max<int64_t>(0, as_int(is_int(b) && !is_int(a) ? b : a));
    Json out = is_str(seq) ? Json("") : Json::array();
    for (int64_t i = 0; i < n; ++i) {
      if (is_str(seq)) out.get_ref<std::string&>() += str(seq);
      else for (const auto& e : seq.json()) out.push_back(e);
    }
    return Value(std::move(out));
  }
  if (!is_num(a) || !is_num(b)) return unsupported();
  const bool ints = is_int(a) && is_int(b);
  if (ints && op != "/") {
    const __int128 x = as_int(a), y = as_int(b);
    if (op == "+") return int_value(x + y);
    if (op == "-") return int_value(x - y);
    if (op == "*") return int_value(x * y);
    if (op == "//" || op == "%") {
      if (y == 0) type_error("integer division or modulo by zero");
      __int128 q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) --q, r += y;
      return int_value(op == "//" ? q : r);
    }
    if (op == "**") {
      if (y >= 0) {
        __int128 out = 1;
        for (__int128 i = 0; i < y; ++i) {
          out *= x;
          if (out > INT64_MAX || out < INT64_MIN) type_error("integer result out of 64-bit range");
        }
        return int_value(out);
      }
      if (x == 0) type_error("0.0 cannot be raised to a negative power");
      return Value(Json(std::pow(static_cast<double>(x), static_cast<double>(y))));
    }
    return unsupported();
  }
  const double x = as_double(a), y = as_double(b);
  if (op == "+") return Value(Json(x + y));
  if (op == "-") return Value(Json(x - y));
  if (op == "*") return Value(Json(x * y));
  if (op == "/") {
    if (y == 0) type_error("division by zero");
    return Value(Json(x / y));
  }
  if (op == "//" || op == "%") {
    if (y == 0) type_error("float floor division or modulo by zero");
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0 && ((y < 0) != (mod < 0))) mod += y, div -= 1.0;
    if (op == "%") return Value(Json(mod == 0 ? std::copysign(0.0, y) : mod));
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return Value(Json(div == 0 ? std::copysign(0.0, x / y) : floordiv));
  }
  if (op == "**") {
    if (x == 0 && y < 0) type_error("0.0 cannot be raised to a negative power");
    if (x < 0 && std::isfinite(y) && y != std::floor(y)) type_error("unsupported complex result of '**'");
    return Value(Json(std::pow(x, y)));
  }
  return unsupported();
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  int c = 0;
  if (is_num(a) && is_num(b)) {
    if (is_int(a) && is_int(b)) c = as_int(a) < as_int(b) ? -1 : as_int(a) > as_int(b) ? 1 : 0;
    else c = as_double(a) < as_double(b) ? -1 : as_double(a) > as_double(b) ? 1 : 0;
    if (!is_int(a) || !is_int(b)) {
      if (std::isnan(as_double(a)) || std::isnan(as_double(b))) return false;
    }
  } else if (is_str(a) && is_str(b)) {
    const int r = str(a).compare(str(b));
    c = r < 0 ? -1 : r > 0 ? 1 : 0;
  } else if (is_list(a) && is_list(b)) {
    const Json &x = a.json(), &y = b.json();
    size_t i = 0;
    while (i < x.size() && i < y.size() && json_equal(x[i], y[i])) ++i;
    if (i < x.size() && i < y.size()) return compare(op, Value(x[i]), Value(y[i]));
    c = x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  } else {
    type_error("'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
  }
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

bool contains(const Value& container, const Value& item) {
  if (container.is_undefined()) return false;
  if (is_str(container)) {
    if (!is_str(item)) type_error("'in <string>' requires string as left operand, not " + type_name(item));
    return str(container).find(str(item)) != std::string::npos;
  }
  if (is_list(container)) {
    for (const auto& e : container.json())
      if (py_equal(Value::borrowed(e), item)) return true;
    return false;
  }
  if (is_dict(container)) {
    if (is_list(item) || is_dict(item)) type_error("unhashable type: '" + type_name(item) + "'");
    return is_str(item) && container.json().contains(str(item));
  }
  type_error("argument of type '" + type_name(container) + "' is not iterable");
}

}  // namespace flashdraft::chat
