#include "chat/template_methods.h"

#include "chat/template_access.h"
#include "chat/template_args.h"
#include "chat/template_filters.h"
#include "chat/template_strings.h"

namespace augur::chat {
namespace {

std::optional<std::string_view> optional_string(const BoundArgs& bound, size_t index,
                                                std::string_view method) {
  if (!bound.given(index) || bound[index].is_none()) return std::nullopt;
  if (!bound[index].is_string()) value_fault(std::string(method) + "(): expected a string");
  return bound[index].as_string();
}

// startswith/endswith take a string or a tuple (a list here) of strings.
bool affix_matches(std::string_view text, const Value& affix, bool prefix) {
  auto one = [&](const Value& candidate) {
    if (!candidate.is_string()) value_fault("startswith/endswith: expected a string");
    const std::string& s = candidate.as_string();
    if (s.size() > text.size()) return false;
    return prefix ? text.substr(0, s.size()) == s : text.substr(text.size() - s.size()) == s;
  };
  if (affix.kind() == Value::Kind::List) {
    for (const Value& candidate : affix.as_list()) {
      if (one(candidate)) return true;
    }
    return false;
  }
  return one(affix);
}

Value string_method(const std::string& text, std::string_view name, const CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const BoundArgs bound(name, args, {"chars"});
    return Value(
        python_strip(text, optional_string(bound, 0, name), name != "rstrip", name != "lstrip"));
  }
  if (name == "split") {
    const BoundArgs bound(name, args, {"sep", "maxsplit"});
    List parts;
    for (auto& part : python_split(text, optional_string(bound, 0, name), bound.int_or(1, -1))) {
      parts.emplace_back(std::move(part));
    }
    return Value(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    const BoundArgs bound(name, args, {"prefix"});
    return Value(affix_matches(text, bound.required(0), name == "startswith"));
  }
  if (name == "replace") {
    const BoundArgs bound(name, args, {"old", "new", "count"});
    const auto old_part = optional_string(bound, 0, name);
    const auto new_part = optional_string(bound, 1, name);
    if (!old_part || !new_part) value_fault("replace() needs two strings");
    return Value(python_replace(text, *old_part, *new_part, bound.int_or(2, -1)));
  }
  if (name == "lower" || name == "upper" || name == "capitalize") {
    return apply_filter(name, Value(text), args);
  }
  if (name == "title") {
    BoundArgs(name, args, {});
    std::string out = text;
    bool in_word = false;
    for (char& c : out) {
      if (static_cast<unsigned char>(c) >= 0x80) unsupported_fault("title of a non-ASCII string");
      const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (letter)
        c = static_cast<char>(in_word ? (c >= 'A' && c <= 'Z' ? c + 32 : c)
                                      : (c >= 'a' && c <= 'z' ? c - 32 : c));
      in_word = letter;
    }
    return Value(std::move(out));
  }
  if (name == "find" || name == "count") {
    const BoundArgs bound(name, args, {"sub"});
    const auto sub = optional_string(bound, 0, name);
    if (!sub) value_fault(std::string(name) + "() needs a string");
    if (name == "find") {
      const size_t hit = text.find(*sub);
      if (hit == std::string::npos) return Value(int64_t{-1});
      return Value(static_cast<int64_t>(code_point_count(std::string_view(text).substr(0, hit))));
    }
    if (sub->empty()) return Value(static_cast<int64_t>(code_point_count(text) + 1));
    int64_t n = 0;
    for (size_t pos = text.find(*sub); pos != std::string::npos;
         pos = text.find(*sub, pos + sub->size())) {
      ++n;
    }
    return Value(n);
  }
  if (name == "join") {
    const BoundArgs bound(name, args, {"iterable"});
    std::string out;
    bool first = true;
    for (const Value& item : bound.required(0).iterate()) {
      if (!item.is_string()) value_fault("join(): expected strings");
      if (!first) out += text;
      first = false;
      out += item.as_string();
    }
    return Value(std::move(out));
  }
  unsupported_fault("str method '" + std::string(name) + "'");
}

Value dict_method(const Dict& dict, std::string_view name, const CallArgs& args) {
  if (name == "items" || name == "keys" || name == "values") {
    BoundArgs(name, args, {});
    List out;
    for (const auto& [key, item] : dict.entries) {
      if (name == "items") out.push_back(Value(List{key, item}));
      if (name == "keys") out.emplace_back(key);
      if (name == "values") out.push_back(item);
    }
    return Value(std::move(out));
  }
  if (name == "get") {
    const BoundArgs bound(name, args, {"key", "default"});
    const Value& key = bound.required(0);
    const Value* found = key.is_string() ? dict.find(key.as_string()) : nullptr;
    if (found) return *found;
    return bound.given(1) ? bound[1] : Value::none();
  }
  if (const Value* held = dict.find(name); held && held->kind() == Value::Kind::Function) {
    return held->as_function().call(args);
  }
  unsupported_fault("dict method '" + std::string(name) + "'");
}

}  // namespace

Value call_method(const Value& object, std::string_view name, const CallArgs& args) {
  switch (object.kind()) {
    case Value::Kind::String: return string_method(object.as_string(), name, args);
    case Value::Kind::Dict: return dict_method(object.as_dict(), name, args);
    case Value::Kind::Namespace:
      if (const Value* held = object.namespace_attributes().find(name);
          held && held->kind() == Value::Kind::Function) {
        return held->as_function().call(args);
      }
      value_fault("namespace has no method '" + std::string(name) + "'");
    case Value::Kind::Undefined:
      get_attribute(object, name);  // throws "'x' is undefined"
      value_fault("undefined value has no method '" + std::string(name) + "'");
    case Value::Kind::List:
      if (name == "append" || name == "extend" || name == "insert" || name == "pop" ||
          name == "remove" || name == "clear" || name == "sort" || name == "reverse") {
        value_fault("list." + std::string(name) +
                    "() modifies the list, which the template sandbox forbids");
      }
      unsupported_fault("list method '" + std::string(name) + "'");
    default:
      value_fault("'" + std::string(object.type_name()) + "' object has no method '" +
                  std::string(name) + "'");
  }
}

}  // namespace augur::chat
