// The values a chat template computes with, following Python/Jinja2 semantics: undefined, none,
// bool, int, float, str, list, dict (insertion-ordered, string keys), namespace() objects and
// callables (globals and macros). Owns truthiness, str()/repr(), equality and ordering, and the
// conversion from JSON. Lists and dicts are immutable once built (the sandbox forbids mutation),
// so copies share them; a namespace is the one mutable object and is shared by design, as
// Python shares it between names.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace augur::chat {

// A type or value error found below the evaluator; the evaluator knows the line and rethrows it
// as InvalidArgument (or Unsupported) with "line N: " in front.
struct ValueFault : std::runtime_error {
  ValueFault(const std::string& message, bool unsupported_construct)
      : std::runtime_error(message), unsupported(unsupported_construct) {}
  bool unsupported;
};
[[noreturn]] void value_fault(const std::string& message);
[[noreturn]] void unsupported_fault(const std::string& message);

class Value;
using List = std::vector<Value>;

// Insertion-ordered like a Python dict; chat dicts are small, so lookup is a linear scan.
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* find(std::string_view key) const;
  void set(std::string key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};
struct Function {
  std::string name;
  std::function<Value(const CallArgs&)> call;
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };

  Value() = default;  // undefined
  static Value undefined(std::string name);
  static Value none();
  Value(bool b);
  Value(int64_t i);
  Value(int i) : Value(static_cast<int64_t>(i)) {}
  Value(double d);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  Value(List list);
  Value(Dict dict);
  static Value namespace_of(Dict attributes);
  static Value function(std::string name, std::function<Value(const CallArgs&)> call);
  static Value from_json(const nlohmann::ordered_json& json);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // Int, float or bool as a double (Python's numeric tower).
  double as_number() const;
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Dict& namespace_attributes() const { return *std::get<std::shared_ptr<Dict>>(data_); }
  const Function& as_function() const { return *std::get<std::shared_ptr<const Function>>(data_); }
  // The name an undefined value was looked up by, for "'x' is undefined".
  std::string undefined_name() const;

  bool truthy() const;
  // str(x) as Jinja prints it; undefined prints as "".
  std::string str() const;
  // repr(x), as str() of a list or dict shows its items.
  std::string repr() const;
  // Python's type name, for error messages.
  std::string_view type_name() const;
  // The items `for` walks: list items, dict keys, string characters; undefined is empty.
  List iterate() const;

  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  Kind kind_ = Kind::Undefined;
  std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<const List>,
               std::shared_ptr<const Dict>, std::shared_ptr<Dict>, std::shared_ptr<const Function>>
      data_;
};

// a < b as Python orders ints, floats, strings and lists; anything else is a ValueFault.
bool less_than(const Value& a, const Value& b);

}  // namespace augur::chat
