#include "chat/interpreter.h"

#include <algorithm>
#include <unordered_map>

#include "chat/builtins.h"
#include "core/error.h"

namespace flashdraft::chat {
namespace {

// An error already carrying its template line; passes through outer handlers untouched.
struct LocatedError : Error {
  using Error::Error;
};

enum class Flow { Normal, Break, Continue };

using Scope = std::unordered_map<std::string, Value>;

}  // namespace

// A macro plus the loop scopes around its definition (Jinja2 macros close over
// them); template-level names are looked up live at call time.
struct MacroClosure {
  const Node* node;
  std::vector<Scope> captured;
};

namespace {

class Interpreter {
 public:
  explicit Interpreter(const Json& context) : ctx_(context) { scopes_.emplace_back(); }

  void exec(const Body& body, std::string& out, Flow& flow) {
    for (const Node& n : body) {
      located(n.line, [&] { exec_node(n, out, flow); });
      if (flow != Flow::Normal) return;
    }
  }

 private:
  template <typename F>
  static auto located(int line, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const LocatedError&) {
      throw;
    } catch (const TemplateRaised&) {
      throw;
    } catch (const Error& e) {
      throw LocatedError("chat template line " + std::to_string(line) + ": " + e.what());
    }
  }

  void exec_node(const Node& n, std::string& out, Flow& flow) {
    switch (n.kind) {
      case Node::Kind::Text: out += n.text; return;
      case Node::Kind::Output: out += to_str(eval(*n.expr)); return;
      case Node::Kind::If:
        for (const auto& [test, body] : n.branches)
          if (truthy(eval(*test))) return exec(body, out, flow);
        return exec(n.else_body, out, flow);
      case Node::Kind::For: return exec_for(n, out, flow);
      case Node::Kind::Set: return exec_set(n);
      case Node::Kind::SetBlock: {
        std::string captured;
        Flow inner = Flow::Normal;
        exec(n.body, captured, inner);
        scopes_.back()[n.targets[0]] = Value(Json(std::move(captured)));
        return;
      }
      case Node::Kind::Break: flow = Flow::Break; return;
      case Node::Kind::Continue: flow = Flow::Continue; return;
      case Node::Kind::Passthrough: return exec(n.body, out, flow);
      case Node::Kind::Macro: {
        auto closure = std::make_shared<MacroClosure>();
        closure->node = &n;
        closure->captured.assign(scopes_.begin() + 1, scopes_.end());
        scopes_.back()[n.targets[0]] = Value::macro(n.targets[0], std::move(closure));
        return;
      }
    }
  }

  Value call_macro(const MacroClosure& m, CallArgs args) {
    const Node& n = *m.node;
    const std::string& name = n.targets[0];
    if (args.positional.size() > n.params.size() && !n.catches_varargs)
      throw Error("macro '" + name + "' takes not more than " + std::to_string(n.params.size()) + " argument(s)");
    if (++macro_depth_ > 200) throw Error("macro '" + name + "' recursed more than 200 levels deep");
    // Run the body on its own scope stack: live template level, captured scopes, parameters.
    std::vector<Scope> saved = std::move(scopes_);
    scopes_.clear();
    scopes_.push_back(std::move(saved[0]));
    struct Restore {
      Interpreter& self;
      std::vector<Scope>& saved;
      ~Restore() {
        saved[0] = std::move(self.scopes_[0]);
        self.scopes_ = std::move(saved);
        --self.macro_depth_;
      }
    } restore{*this, saved};
    for (const Scope& c : m.captured) scopes_.push_back(c);
    scopes_.emplace_back();
    Json extra_kwargs = Json::object();
    std::vector<bool> bound(n.params.size(), false);
    for (size_t i = 0; i < args.positional.size() && i < n.params.size(); ++i) {
      scopes_.back()[n.params[i]] = args.positional[i];
      bound[i] = true;
    }
    for (auto& [k, v] : args.keyword) {
      auto it = std::find(n.params.begin(), n.params.end(), k);
      if (it == n.params.end()) {
        if (!n.catches_kwargs) throw Error("macro '" + name + "' takes no keyword argument '" + k + "'");
        extra_kwargs[k] = as_element(v);
        continue;
      }
      const size_t i = static_cast<size_t>(it - n.params.begin());
      if (bound[i]) throw Error("macro '" + name + "' got multiple values for argument '" + k + "'");
      scopes_.back()[k] = v;
      bound[i] = true;
    }
    for (size_t i = 0; i < n.params.size(); ++i) {
      if (bound[i]) continue;
      // Defaults are evaluated at call time and may use the parameters before them.
      scopes_.back()[n.params[i]] =
          n.defaults[i] ? eval(*n.defaults[i]) : Value::undefined("parameter '" + n.params[i] + "' was not provided");
    }
    if (n.catches_varargs) {
      Json rest = Json::array();
      for (size_t i = n.params.size(); i < args.positional.size(); ++i) rest.push_back(as_element(args.positional[i]));
      scopes_.back()["varargs"] = Value(std::move(rest));
    }
    if (n.catches_kwargs) scopes_.back()["kwargs"] = Value(std::move(extra_kwargs));
    std::string out;
    Flow flow = Flow::Normal;
    exec(n.body, out, flow);
    return Value(Json(std::move(out)));
  }

  void assign_targets(const std::vector<std::string>& targets, const Value& v) {
    auto& scope = scopes_.back();
    if (targets.size() == 1) {
      scope[targets[0]] = v;
      return;
    }
    std::vector<Value> items = iterate(v);
    if (items.size() != targets.size())
      throw Error("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()) + " names");
    for (size_t i = 0; i < targets.size(); ++i) scope[targets[i]] = items[i];
  }

  void exec_set(const Node& n) {
    Value v = eval(*n.expr);
    if (n.ns_attr.empty()) return assign_targets(n.targets, v);
    Value target = lookup(n.targets[0]);
    if (target.kind() != Value::Kind::Namespace) throw Error("cannot assign attribute on non-namespace object");
    target.ns().set(n.ns_attr, std::move(v));
  }

  // Each iteration gets a fresh scope: Jinja2 does not carry `set` inside a
  // loop body over to the next iteration or out of the loop.
  void exec_for(const Node& n, std::string& out, Flow& flow) {
    std::vector<Value> all = iterate(eval(*n.expr));
    if (n.filter) {
      std::vector<Value> kept;
      for (Value& item : all) {
        scopes_.emplace_back();
        assign_targets(n.targets, item);
        const bool keep = truthy(eval(*n.filter));
        scopes_.pop_back();
        if (keep) kept.push_back(std::move(item));
      }
      all = std::move(kept);
    }
    auto items = std::make_shared<const std::vector<Value>>(std::move(all));
    for (size_t i = 0; i < items->size(); ++i) {
      auto loop = std::make_shared<LoopObject>();
      loop->items = items;
      loop->index0 = i;
      scopes_.emplace_back();
      scopes_.back()["loop"] = Value::make_loop(loop);
      assign_targets(n.targets, (*items)[i]);
      Flow inner = Flow::Normal;
      exec(n.body, out, inner);
      scopes_.pop_back();
      if (inner == Flow::Break) break;
    }
    if (items->empty()) {
      scopes_.emplace_back();
      exec(n.else_body, out, flow);
      scopes_.pop_back();
    }
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    if (ctx_.is_object()) {
      auto it = ctx_.find(name);
      if (it != ctx_.end()) return Value::borrowed(*it);
    }
    if (is_supported_global_function(name)) return Value::function(name);
    return Value::undefined("'" + name + "' is undefined");
  }

  CallArgs eval_args(const Expr& e, size_t first) {
    CallArgs args;
    for (size_t i = first; i < e.kids.size(); ++i) args.positional.push_back(eval(*e.kids[i]));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v));
    return args;
  }

  static Json as_element(const Value& v) {
    if (!v.is_json()) throw Error("cannot store " + type_name(v) + " in a list or dict");
    return v.json();
  }

  Value eval(const Expr& e) {
    return located(e.line, [&] { return eval_unlocated(e); });
  }

  Value eval_unlocated(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Const: return Value(e.value);
      case Expr::Kind::Name: return lookup(e.name);
      case Expr::Kind::List: {
        Json out = Json::array();
        for (const auto& k : e.kids) out.push_back(as_element(eval(*k)));
        return Value(std::move(out));
      }
      case Expr::Kind::Dict: {
        Json out = Json::object();
        for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
          const Value key = eval(*e.kids[i]);
          if (!key.is_json() || !key.json().is_string()) throw Error("dict keys must be strings");
          out[key.json().get<std::string>()] = as_element(eval(*e.kids[i + 1]));
        }
        return Value(std::move(out));
      }
      case Expr::Kind::GetAttr: return get_attr(eval(*e.kids[0]), e.name);
      case Expr::Kind::GetItem: {
        const Value obj = eval(*e.kids[0]);
        const Expr& index = *e.kids[1];
        if (index.kind != Expr::Kind::Slice) return get_item(obj, eval(index));
        auto part = [&](size_t i) { return index.kids[i] ? eval(*index.kids[i]) : Value(Json(nullptr)); };
        return slice(obj, part(0), part(1), part(2));
      }
      case Expr::Kind::Slice: throw Error("slice outside of a subscript");
      case Expr::Kind::Call: return eval_call(e);
      case Expr::Kind::Filter: {
        const Value operand = eval(*e.kids[0]);
        return apply_filter(e.name, operand, eval_args(e, 1));
      }
      case Expr::Kind::Test: {
        const Value operand = eval(*e.kids[0]);
        return Value(Json(apply_test(e.name, operand, eval_args(e, 1))));
      }
      case Expr::Kind::Neg: return negate(eval(*e.kids[0]), true);
      case Expr::Kind::Pos: return negate(eval(*e.kids[0]), false);
      case Expr::Kind::Not: return Value(Json(!truthy(eval(*e.kids[0]))));
      case Expr::Kind::Binary: {
        const Value l = eval(*e.kids[0]);
        return binary_op(e.name, l, eval(*e.kids[1]));
      }
      case Expr::Kind::And: {
        Value l = eval(*e.kids[0]);
        return truthy(l) ? eval(*e.kids[1]) : l;
      }
      case Expr::Kind::Or: {
        Value l = eval(*e.kids[0]);
        return truthy(l) ? l : eval(*e.kids[1]);
      }
      case Expr::Kind::Compare: {
        Value left = eval(*e.kids[0]);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.kids[i + 1]);
          if (!compare(e.ops[i], left, right)) return Value(Json(false));
          left = std::move(right);
        }
        return Value(Json(true));
      }
      case Expr::Kind::Concat: {
        std::string s;
        for (const auto& k : e.kids) s += to_str(eval(*k));
        return Value(Json(std::move(s)));
      }
      case Expr::Kind::Cond:
        if (truthy(eval(*e.kids[1]))) return eval(*e.kids[0]);
        return e.kids[2] ? eval(*e.kids[2]) : Value::undefined("the inline if-expression had no else branch");
    }
    throw Error("internal error: unknown expression");
  }

  Value eval_call(const Expr& e) {
    const Expr& callee = *e.kids[0];
    if (callee.kind == Expr::Kind::GetAttr) {
      const Value self = eval(*callee.kids[0]);
      return call_method(self, callee.name, eval_args(e, 1));
    }
    const Value fn = eval(callee);
    if (fn.is_undefined()) fail_undefined(fn);
    if (fn.kind() != Value::Kind::Function) throw Error("'" + type_name(fn) + "' object is not callable");
    if (fn.bound_self()) return call_method(*fn.bound_self(), fn.function_name(), eval_args(e, 1));
    if (fn.macro_closure()) return call_macro(*fn.macro_closure(), eval_args(e, 1));
    return call_global(fn.function_name(), eval_args(e, 1));
  }

  const Json& ctx_;
  std::vector<Scope> scopes_;
  int macro_depth_ = 0;
};

}  // namespace

std::string render_template(const Body& body, const Json& context) {
  Interpreter interp(context);
  std::string out;
  Flow flow = Flow::Normal;
  interp.exec(body, out, flow);
  return out;
}

}  // namespace flashdraft::chat
