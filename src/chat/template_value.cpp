#include "chat/template_value.h"

#include "chat/template_strings.h"

namespace augur::chat {

void value_fault(const std::string& message) {
  throw ValueFault(message, /*unsupported_construct=*/false);
}
void unsupported_fault(const std::string& message) {
  throw ValueFault(message, /*unsupported_construct=*/true);
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string name) {
  Value v;
  v.data_ = std::move(name);
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value::Value(bool b) : kind_(Kind::Bool), data_(b) {}
Value::Value(int64_t i) : kind_(Kind::Int), data_(i) {}
Value::Value(double d) : kind_(Kind::Float), data_(d) {}
Value::Value(std::string s) : kind_(Kind::String), data_(std::move(s)) {}
Value::Value(List list) : kind_(Kind::List), data_(std::make_shared<const List>(std::move(list))) {}
Value::Value(Dict dict) : kind_(Kind::Dict), data_(std::make_shared<const Dict>(std::move(dict))) {}

Value Value::namespace_of(Dict attributes) {
  Value v;
  v.kind_ = Kind::Namespace;
  v.data_ = std::make_shared<Dict>(std::move(attributes));
  return v;
}

Value Value::function(std::string name, std::function<Value(const CallArgs&)> call) {
  Value v;
  v.kind_ = Kind::Function;
  v.data_ = std::make_shared<const Function>(Function{std::move(name), std::move(call)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) {
        unsupported_fault("integer " + std::to_string(u) + " beyond 64-bit signed range");
      }
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List list;
      list.reserve(json.size());
      for (const auto& item : json) list.push_back(from_json(item));
      return Value(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict dict;
      for (const auto& [key, item] : json.items()) dict.entries.emplace_back(key, from_json(item));
      return Value(std::move(dict));
    }
    default:
      value_fault("JSON value of type " + std::string(json.type_name()) +
                  " cannot be a template value");
  }
}

std::string Value::undefined_name() const {
  const auto* name = std::get_if<std::string>(&data_);
  return name ? *name : std::string();
}

double Value::as_number() const {
  switch (kind_) {
    case Kind::Int: return static_cast<double>(as_int());
    case Kind::Float: return as_float();
    case Kind::Bool: return as_bool() ? 1.0 : 0.0;
    default: value_fault("expected a number, got " + std::string(type_name()));
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return as_float() != 0.0;
    case Kind::String: return !as_string().empty();
    case Kind::List: return !as_list().empty();
    case Kind::Dict: return !as_dict().entries.empty();
    case Kind::Namespace:
    case Kind::Function: return true;
  }
  return false;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return as_string();
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return as_bool() ? "True" : "False";
    case Kind::Int: return std::to_string(as_int());
    case Kind::Float: return python_float_repr(as_float());
    case Kind::String: return python_string_repr(as_string());
    case Kind::List: {
      std::string out = "[";
      for (size_t idx = 0; idx < as_list().size(); ++idx) {
        if (idx) out += ", ";
        out += as_list()[idx].repr();
      }
      return out + "]";
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : as_dict().entries) {
        if (!first) out += ", ";
        first = false;
        out += python_string_repr(key) + ": " + item.repr();
      }
      return out + "}";
    }
    case Kind::Namespace: {
      Dict copy = namespace_attributes();
      return "<Namespace " + Value(std::move(copy)).repr() + ">";
    }
    case Kind::Function: unsupported_fault("printing the function '" + as_function().name + "'");
  }
  return "";
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Function: return "function";
  }
  return "?";
}

List Value::iterate() const {
  switch (kind_) {
    case Kind::Undefined: return {};
    case Kind::List: return as_list();
    case Kind::Dict: {
      List keys;
      for (const auto& entry : as_dict().entries) keys.emplace_back(entry.first);
      return keys;
    }
    case Kind::String: {
      List chars;
      for (char32_t cp : decode_utf8(as_string())) {
        std::string one;
        append_utf8(one, cp);
        chars.emplace_back(std::move(one));
      }
      return chars;
    }
    default: value_fault("'" + std::string(type_name()) + "' object is not iterable");
  }
}

bool operator==(const Value& a, const Value& b) {
  using Kind = Value::Kind;
  const bool a_num = a.is_number() || a.kind() == Kind::Bool;
  const bool b_num = b.is_number() || b.kind() == Kind::Bool;
  if (a_num && b_num) {
    if (a.kind() != Kind::Float && b.kind() != Kind::Float) {
      const int64_t x = a.kind() == Kind::Bool ? a.as_bool() : a.as_int();
      const int64_t y = b.kind() == Kind::Bool ? b.as_bool() : b.as_int();
      return x == y;
    }
    return a.as_number() == b.as_number();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return a.as_string() == b.as_string();
    case Kind::List: return a.as_list() == b.as_list();
    case Kind::Dict: {
      const auto& x = a.as_dict().entries;
      if (x.size() != b.as_dict().entries.size()) return false;
      for (const auto& [key, item] : x) {
        const Value* other = b.as_dict().find(key);
        if (!other || *other != item) return false;
      }
      return true;
    }
    case Kind::Namespace: return &a.namespace_attributes() == &b.namespace_attributes();
    case Kind::Function: return &a.as_function() == &b.as_function();
    default: return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  using Kind = Value::Kind;
  const bool a_num = a.is_number() || a.kind() == Kind::Bool;
  const bool b_num = b.is_number() || b.kind() == Kind::Bool;
  if (a_num && b_num) {
    if (a.kind() == Kind::Int && b.kind() == Kind::Int) return a.as_int() < b.as_int();
    return a.as_number() < b.as_number();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // code-point order
  if (a.kind() == Kind::List && b.kind() == Kind::List) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    for (size_t idx = 0; idx < x.size() && idx < y.size(); ++idx) {
      if (x[idx] != y[idx]) return less_than(x[idx], y[idx]);
    }
    return x.size() < y.size();
  }
  value_fault("'<' not supported between instances of '" + std::string(a.type_name()) + "' and '" +
              std::string(b.type_name()) + "'");
}

}  // namespace augur::chat
