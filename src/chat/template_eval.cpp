#include "chat/template_eval.h"

#include <cmath>
#include <ctime>
#include <limits>

#include "chat/chat_template.h"
#include "chat/template_access.h"
#include "chat/template_args.h"
#include "chat/template_filters.h"
#include "chat/template_methods.h"
#include "common/error.h"

namespace augur::chat {
namespace {

// range() and list repetition refuse to build more items than this; a chat template never needs
// more (it loops over messages).
constexpr int64_t kMaxRangeItems = 1 << 16;
// Limits that keep a hostile template (a GGUF's tokenizer.chat_template is a stranger's code)
// from hanging or exhausting memory or stack; a real chat template stays far below each.
constexpr size_t kMaxStringBytes = size_t{1} << 24;  // any string, the output included (16 MiB)
constexpr int64_t kMaxSteps = int64_t{1} << 16;      // statements run and loop iterations (a
                                                     // conversation needs about 10 per message)
constexpr int kMaxMacroDepth = 32;                   // macro calls inside macro calls

void check_string_size(size_t bytes) {
  if (bytes > kMaxStringBytes)
    value_fault("string of " + std::to_string(bytes) + " bytes exceeds the template limit of " +
                std::to_string(kMaxStringBytes));
}

enum class Flow { Normal, Break, Continue };

std::string at(int line) {
  return "line " + std::to_string(line) + ": ";
}

[[noreturn]] void rethrow_with_line(const ValueFault& fault, int line) {
  if (fault.unsupported) throw Unsupported(at(line) + "unsupported " + fault.what());
  throw InvalidArgument(at(line) + fault.what());
}

bool is_intlike(const Value& v) {
  return v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Bool;
}
int64_t intlike(const Value& v) {
  return v.kind() == Value::Kind::Int ? v.as_int() : v.as_bool();
}
bool is_numeric(const Value& v) {
  return is_intlike(v) || v.kind() == Value::Kind::Float;
}

[[noreturn]] void operand_error(std::string_view op, const Value& a, const Value& b) {
  for (const Value* v : {&a, &b}) {
    if (v->is_undefined()) {
      const std::string name = v->undefined_name();
      value_fault(name.empty() ? "a value is undefined" : "'" + name + "' is undefined");
    }
  }
  value_fault("unsupported operand type(s) for " + std::string(op) + ": '" +
              std::string(a.type_name()) + "' and '" + std::string(b.type_name()) + "'");
}

// Python ints are unbounded; ours stop at 64 bits and say so rather than wrap.
template <typename Op>
int64_t checked(Op op, int64_t x, int64_t y) {
  int64_t result = 0;
  if (op(x, y, &result)) value_fault("integer overflow");
  return result;
}
bool add_overflows(int64_t x, int64_t y, int64_t* r) {
  return __builtin_add_overflow(x, y, r);
}
bool sub_overflows(int64_t x, int64_t y, int64_t* r) {
  return __builtin_sub_overflow(x, y, r);
}
bool mul_overflows(int64_t x, int64_t y, int64_t* r) {
  return __builtin_mul_overflow(x, y, r);
}

Value repeat(const Value& seq, int64_t times) {
  if (times > kMaxRangeItems) value_fault("repetition count too large");
  if (seq.is_string()) {
    if (times > 0) check_string_size(seq.as_string().size() * static_cast<size_t>(times));
    std::string out;
    for (int64_t k = 0; k < times; ++k) out += seq.as_string();
    return Value(std::move(out));
  }
  if (times > 0 && seq.as_list().size() * static_cast<size_t>(times) > kMaxRangeItems)
    value_fault("repeated list too long");
  List out;
  for (int64_t k = 0; k < times; ++k)
    out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return Value(std::move(out));
}

Value arithmetic(std::string_view op, const Value& a, const Value& b) {
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_string_size(a.as_string().size() + b.as_string().size());
      return Value(a.as_string() + b.as_string());
    }
    if (a.kind() == Value::Kind::List && b.kind() == Value::Kind::List) {
      if (a.as_list().size() + b.as_list().size() > kMaxRangeItems)
        value_fault("concatenated list too long");
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.kind() == Value::Kind::List) && is_intlike(b))
      return repeat(a, intlike(b));
    if (is_intlike(a) && (b.is_string() || b.kind() == Value::Kind::List))
      return repeat(b, intlike(a));
  }
  if (!is_numeric(a) || !is_numeric(b)) {
    if (op == "%" && a.is_string()) unsupported_fault("printf-style string formatting ('%')");
    operand_error(op, a, b);
  }
  if (is_intlike(a) && is_intlike(b)) {
    const int64_t x = intlike(a), y = intlike(b);
    if (op == "+") return Value(checked(add_overflows, x, y));
    if (op == "-") return Value(checked(sub_overflows, x, y));
    if (op == "*") return Value(checked(mul_overflows, x, y));
    if (op == "//" || op == "%") {
      if (y == 0) value_fault("integer division or modulo by zero");
      int64_t quotient = x / y, remainder = x % y;
      if (remainder != 0 && ((remainder < 0) != (y < 0))) --quotient, remainder += y;
      return Value(op == "//" ? quotient : remainder);
    }
    if (op == "**" && y >= 0) {
      int64_t result = 1;
      for (int64_t k = 0; k < y; ++k) result = checked(mul_overflows, result, x);
      return Value(result);
    }
  }
  const double x = a.as_number(), y = b.as_number();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "/") {
    if (y == 0) value_fault("division by zero");
    return Value(x / y);
  }
  if (op == "//" || op == "%") {
    if (y == 0) value_fault("float division or modulo by zero");
    const double remainder = std::fmod(x, y);
    const double fixed = remainder != 0 && ((remainder < 0) != (y < 0)) ? remainder + y : remainder;
    return op == "%" ? Value(fixed) : Value(std::floor((x - fixed) / y + 0.5));
  }
  if (op == "**") return Value(std::pow(x, y));
  operand_error(op, a, b);
}

std::optional<int64_t> slice_bound(const Value& v) {
  if (v.is_none() || v.is_undefined()) return std::nullopt;
  if (!is_intlike(v)) value_fault("slice indices must be integers or None");
  return intlike(v);
}

class Renderer {
 public:
  Renderer(const Dict& variables, std::chrono::system_clock::time_point now) : now_(now) {
    scopes_.emplace_back();
    install_globals();
    for (const auto& [name, value] : variables.entries) scopes_.back().set(name, value);
  }

  std::string run(const Body& body) {
    if (exec_body(body) != Flow::Normal) {
      throw FormatError("'break' or 'continue' outside a for loop");
    }
    return std::move(out_);
  }

 private:
  void install_globals() {
    Dict& root = scopes_.back();
    root.set("raise_exception",
             Value::function("raise_exception", [](const CallArgs& args) -> Value {
               const BoundArgs bound("raise_exception", args, {"message"});
               throw TemplateRaised(bound.required(0).str());
             }));
    root.set("strftime_now", Value::function("strftime_now", [this](const CallArgs& args) {
               const BoundArgs bound("strftime_now", args, {"format"});
               return Value(strftime_now(bound.string_or(0, "")));
             }));
    root.set("namespace", Value::function("namespace", [](const CallArgs& args) {
               Dict attributes;
               for (const Value& v : args.positional) {
                 if (v.kind() != Value::Kind::Dict) value_fault("namespace(): expected a dict");
                 for (const auto& [key, item] : v.as_dict().entries) attributes.set(key, item);
               }
               for (const auto& [key, item] : args.keyword) attributes.set(key, item);
               return Value::namespace_of(std::move(attributes));
             }));
    root.set("dict", Value::function("dict", [](const CallArgs& args) {
               if (!args.positional.empty()) unsupported_fault("dict() with positional arguments");
               Dict d;
               for (const auto& [key, item] : args.keyword) d.set(key, item);
               return Value(std::move(d));
             }));
    root.set("range", Value::function("range", [](const CallArgs& args) {
               if (!args.keyword.empty() || args.positional.empty() || args.positional.size() > 3) {
                 value_fault("range() takes 1 to 3 integers");
               }
               for (const Value& v : args.positional) {
                 if (!is_intlike(v)) value_fault("range() takes integers");
               }
               const auto& p = args.positional;
               const int64_t start = p.size() > 1 ? intlike(p[0]) : 0;
               const int64_t stop = p.size() > 1 ? intlike(p[1]) : intlike(p[0]);
               const int64_t step = p.size() > 2 ? intlike(p[2]) : 1;
               if (step == 0) value_fault("range() step must not be zero");
               List out;
               for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                 if (static_cast<int64_t>(out.size()) >= kMaxRangeItems)
                   value_fault("range() too large");
                 out.emplace_back(i);
               }
               return Value(std::move(out));
             }));
  }

  std::string strftime_now(const std::string& format) const {
    const std::time_t t = std::chrono::system_clock::to_time_t(now_);
    std::tm local{};
    localtime_r(&t, &local);
    std::string buf(256 + format.size() * 8, '\0');
    // strftime returns 0 both for an empty result and for overflow; the buffer leaves room.
    const size_t n =
        format.empty() ? 0 : std::strftime(buf.data(), buf.size(), format.c_str(), &local);
    buf.resize(n);
    return buf;
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (const Value* found = it->find(name)) return *found;
    }
    return Value::undefined(name);
  }

  // ---- statements ----

  Flow exec_body(const Body& body) {
    for (const auto& node : body) {
      const Flow flow = exec(*node);
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  // One unit of work: a statement run or a loop iteration.
  void step() {
    if (++steps_ > kMaxSteps)
      value_fault("the template runs more than " + std::to_string(kMaxSteps) +
                  " statements and loop iterations");
  }

  void emit(std::string_view text) {
    check_string_size(out_.size() + text.size());
    out_ += text;
  }

  Flow exec(const Node& node) {
    try {
      step();
      switch (node.kind) {
        case NodeKind::Text: emit(node.text); return Flow::Normal;
        case NodeKind::Output: emit(eval(*node.expr).str()); return Flow::Normal;
        case NodeKind::If: return exec_body(eval(*node.expr).truthy() ? node.body : node.else_body);
        case NodeKind::For: exec_for(node); return Flow::Normal;
        case NodeKind::Set: exec_set(node); return Flow::Normal;
        case NodeKind::SetBlock: {
          std::string saved;
          std::swap(saved, out_);
          const Flow flow = exec_body(node.body);
          std::swap(saved, out_);
          scopes_.back().set(node.targets[0], Value(std::move(saved)));
          return flow;
        }
        case NodeKind::Macro: scopes_.back().set(node.text, make_macro(node)); return Flow::Normal;
        case NodeKind::Break: return Flow::Break;
        case NodeKind::Continue: return Flow::Continue;
        case NodeKind::Scope: return exec_body(node.body);
      }
    } catch (const ValueFault& fault) {
      rethrow_with_line(fault, node.line);
    }
    return Flow::Normal;
  }

  void assign(const std::vector<std::string>& targets, const Value& value) {
    if (targets.size() == 1) {
      scopes_.back().set(targets[0], value);
      return;
    }
    const List items = value.iterate();
    if (items.size() != targets.size()) {
      value_fault("cannot unpack " + std::to_string(items.size()) + " values into " +
                  std::to_string(targets.size()) + " names");
    }
    for (size_t idx = 0; idx < targets.size(); ++idx) scopes_.back().set(targets[idx], items[idx]);
  }

  void exec_set(const Node& node) {
    Value value = eval(*node.expr);
    if (node.attribute.empty()) {
      assign(node.targets, value);
      return;
    }
    const Value target = lookup(node.targets[0]);
    if (target.kind() != Value::Kind::Namespace) {
      value_fault("cannot assign attribute on non-namespace object '" + node.targets[0] + "'");
    }
    target.namespace_attributes().set(node.attribute, std::move(value));
  }

  void exec_for(const Node& node) {
    const List all = eval(*node.expr).iterate();
    List items;
    if (node.condition) {
      for (const Value& item : all) {
        scopes_.emplace_back();
        assign(node.targets, item);
        const bool keep = eval(*node.condition).truthy();
        scopes_.pop_back();
        if (keep) items.push_back(item);
      }
    } else {
      items = all;
    }
    if (items.empty()) {
      exec_body(node.else_body);
      return;
    }
    const int64_t length = static_cast<int64_t>(items.size());
    for (int64_t index = 0; index < length; ++index) {
      step();
      scopes_.emplace_back();
      const auto pos = static_cast<size_t>(index);
      Dict loop;
      loop.set("index", Value(index + 1));
      loop.set("index0", Value(index));
      loop.set("revindex", Value(length - index));
      loop.set("revindex0", Value(length - index - 1));
      loop.set("first", Value(index == 0));
      loop.set("last", Value(index == length - 1));
      loop.set("length", Value(length));
      loop.set("depth", Value(int64_t{1}));
      loop.set("depth0", Value(int64_t{0}));
      if (index > 0) loop.set("previtem", items[pos - 1]);
      if (index + 1 < length) loop.set("nextitem", items[pos + 1]);
      loop.set("cycle", Value::function("loop.cycle", [index](const CallArgs& args) {
                 if (args.positional.empty()) value_fault("loop.cycle() needs arguments");
                 return args.positional[static_cast<size_t>(index) % args.positional.size()];
               }));
      scopes_.back().set("loop", Value(std::move(loop)));
      assign(node.targets, items[pos]);
      const Flow flow = exec_body(node.body);
      scopes_.pop_back();
      if (flow == Flow::Break) break;
    }
  }

  Value make_macro(const Node& node) {
    return Value::function(node.text, [this, &node](const CallArgs& args) {
      if (args.positional.size() > node.targets.size()) {
        value_fault("macro '" + node.text + "' takes " + std::to_string(node.targets.size()) +
                    " arguments");
      }
      Dict params;
      for (size_t idx = 0; idx < node.targets.size(); ++idx) {
        Value v;
        if (idx < args.positional.size()) {
          v = args.positional[idx];
        } else if (node.defaults[idx]) {
          v = eval(*node.defaults[idx]);
        } else {
          v = Value::undefined(node.targets[idx]);
        }
        params.set(node.targets[idx], std::move(v));
      }
      for (const auto& [key, value] : args.keyword) {
        bool known = false;
        for (const auto& name : node.targets) known |= name == key;
        if (!known) value_fault("macro '" + node.text + "' has no parameter '" + key + "'");
        params.set(key, value);
      }
      if (macro_depth_ >= kMaxMacroDepth)
        value_fault("macro calls nested deeper than " + std::to_string(kMaxMacroDepth));
      ++macro_depth_;
      struct Leave {
        int& depth;
        ~Leave() { --depth; }
      } leave{macro_depth_};
      // A macro sees the template's top-level names and its parameters, not the caller's locals.
      std::vector<Dict> saved_scopes(scopes_.begin() + 1, scopes_.end());
      scopes_.resize(1);
      scopes_.push_back(std::move(params));
      std::string saved_out;
      std::swap(saved_out, out_);
      try {
        exec_body(node.body);
      } catch (...) {
        scopes_.resize(1);
        scopes_.insert(scopes_.end(), saved_scopes.begin(), saved_scopes.end());
        throw;
      }
      std::swap(saved_out, out_);
      scopes_.resize(1);
      scopes_.insert(scopes_.end(), saved_scopes.begin(), saved_scopes.end());
      return Value(std::move(saved_out));
    });
  }

  // ---- expressions ----

  CallArgs eval_args(const Expr& e) {
    CallArgs args;
    for (const auto& arg : e.args) args.positional.push_back(eval(*arg));
    for (const auto& [key, arg] : e.kwargs) args.keyword.emplace_back(key, eval(*arg));
    return args;
  }

  Value eval(const Expr& e) {
    try {
      return eval_node(e);
    } catch (const ValueFault& fault) {
      rethrow_with_line(fault, e.line);
    }
  }

  Value eval_node(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Literal: return e.literal;
      case ExprKind::Name: return lookup(e.name);
      case ExprKind::Attribute: return get_attribute(eval(*e.children[0]), e.name);
      case ExprKind::Subscript: return get_item(eval(*e.children[0]), eval(*e.children[1]));
      case ExprKind::Slice: {
        const Value object = eval(*e.children[0]);
        std::optional<int64_t> bounds[3];
        for (int k = 0; k < 3; ++k) {
          if (e.children[k + 1]) bounds[k] = slice_bound(eval(*e.children[k + 1]));
        }
        return get_slice(object, bounds[0], bounds[1], bounds[2]);
      }
      case ExprKind::Call: {
        const Value callee = eval(*e.children[0]);
        const CallArgs args = eval_args(e);
        if (callee.kind() == Value::Kind::Function) return callee.as_function().call(args);
        if (callee.is_undefined()) value_fault("'" + callee.undefined_name() + "' is undefined");
        value_fault("'" + std::string(callee.type_name()) + "' object is not callable");
      }
      case ExprKind::MethodCall: {
        const Value object = eval(*e.children[0]);
        return call_method(object, e.name, eval_args(e));
      }
      case ExprKind::Filter: return apply_filter(e.name, eval(*e.children[0]), eval_args(e));
      case ExprKind::Test:
        return Value(apply_test(e.name, eval(*e.children[0]), eval_args(e)) != e.negated);
      case ExprKind::Unary: {
        const Value operand = eval(*e.children[0]);
        if (e.name == "not") return Value(!operand.truthy());
        if (operand.kind() == Value::Kind::Float) {
          return Value(e.name == "-" ? -operand.as_float() : operand.as_float());
        }
        if (!is_intlike(operand)) operand_error("unary " + e.name, operand, operand);
        return Value(e.name == "-" ? -intlike(operand) : intlike(operand));
      }
      case ExprKind::Binary: return eval_binary(e);
      case ExprKind::Conditional:
        if (eval(*e.children[0]).truthy()) return eval(*e.children[1]);
        return e.children[2] ? eval(*e.children[2]) : Value::undefined("");
      case ExprKind::ListLiteral:
      case ExprKind::TupleLiteral: {
        List items;
        for (const auto& child : e.children) items.push_back(eval(*child));
        return Value(std::move(items));
      }
      case ExprKind::DictLiteral: {
        Dict dict;
        for (size_t idx = 0; idx < e.children.size(); ++idx) {
          const Value key = eval(*e.args[idx]);
          if (!key.is_string()) unsupported_fault("dict literal with a non-string key");
          dict.set(key.as_string(), eval(*e.children[idx]));
        }
        return Value(std::move(dict));
      }
    }
    return Value();
  }

  Value eval_binary(const Expr& e) {
    const std::string& op = e.name;
    Value left = eval(*e.children[0]);
    if (op == "and") return left.truthy() ? eval(*e.children[1]) : left;
    if (op == "or") return left.truthy() ? left : eval(*e.children[1]);
    const Value right = eval(*e.children[1]);
    if (op == "==") return Value(left == right);
    if (op == "!=") return Value(left != right);
    if (op == "<") return Value(less_than(left, right));
    if (op == ">") return Value(less_than(right, left));
    if (op == "<=") return Value(!less_than(right, left));
    if (op == ">=") return Value(!less_than(left, right));
    if (op == "in") return Value(contains(right, left));
    if (op == "not in") return Value(!contains(right, left));
    if (op == "~") {
      std::string joined = left.str();
      const std::string tail = right.str();
      check_string_size(joined.size() + tail.size());
      return Value(joined + tail);
    }
    return arithmetic(op, left, right);
  }

  std::chrono::system_clock::time_point now_;
  std::vector<Dict> scopes_;  // [0]: globals and the context; one more per loop iteration
  std::string out_;
  int64_t steps_ = 0;
  int macro_depth_ = 0;
};

}  // namespace

std::string render_body(const Body& body, const Dict& variables,
                        std::chrono::system_clock::time_point now) {
  return Renderer(variables, now).run(body);
}

}  // namespace augur::chat
