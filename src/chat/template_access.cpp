#include "chat/template_access.h"

#include <algorithm>

#include "chat/template_strings.h"

namespace augur::chat {
namespace {

constexpr std::string_view kDictMethods[] = {"items",      "keys",    "values",  "get",
                                             "pop",        "update",  "copy",    "clear",
                                             "setdefault", "popitem", "fromkeys"};
constexpr std::string_view kStrMethods[] = {
    "strip",        "lstrip",       "rstrip",     "split",     "rsplit",    "splitlines",
    "startswith",   "endswith",     "replace",    "lower",     "upper",     "title",
    "capitalize",   "find",         "rfind",      "index",     "rindex",    "count",
    "join",         "format",       "isdigit",    "isalpha",   "isalnum",   "isspace",
    "islower",      "isupper",      "zfill",      "center",    "ljust",     "rjust",
    "partition",    "rpartition",   "encode",     "casefold",  "swapcase",  "expandtabs",
    "removeprefix", "removesuffix", "translate",  "istitle",   "isnumeric", "isdecimal",
    "isidentifier", "isprintable",  "format_map", "maketrans", "isascii"};
constexpr std::string_view kListMethods[] = {"append", "extend",  "insert", "remove",
                                             "pop",    "clear",   "index",  "count",
                                             "sort",   "reverse", "copy"};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

[[noreturn]] void undefined_access(const Value& object) {
  const std::string name = object.undefined_name();
  value_fault(name.empty() ? "a value is undefined" : "'" + name + "' is undefined");
}

// Python index normalization: negative counts from the end; out of range is nullopt.
std::optional<size_t> normalize_index(int64_t index, size_t size) {
  if (index < 0) index += static_cast<int64_t>(size);
  if (index < 0 || index >= static_cast<int64_t>(size)) return std::nullopt;
  return static_cast<size_t>(index);
}

// The positions a Python slice selects from a sequence of `size` items.
std::vector<size_t> slice_positions(size_t size, std::optional<int64_t> start,
                                    std::optional<int64_t> stop, std::optional<int64_t> step) {
  const int64_t n = static_cast<int64_t>(size);
  const int64_t by = step.value_or(1);
  if (by == 0) value_fault("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> bound, int64_t fallback) {
    if (!bound) return fallback;
    int64_t b = *bound;
    if (b < 0) b += n;
    if (by > 0) return std::clamp<int64_t>(b, 0, n);
    return std::clamp<int64_t>(b, -1, n - 1);
  };
  const int64_t from = clamp(start, by > 0 ? 0 : n - 1);
  const int64_t to = clamp(stop, by > 0 ? n : -1);
  std::vector<size_t> positions;
  for (int64_t idx = from; by > 0 ? idx < to : idx > to; idx += by) {
    positions.push_back(static_cast<size_t>(idx));
  }
  return positions;
}

}  // namespace

Value get_attribute(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Value::Kind::Undefined: undefined_access(object);
    case Value::Kind::Dict:
      if (const Value* found = object.as_dict().find(name)) {
        if (!listed(kDictMethods, name)) return *found;
      }
      if (listed(kDictMethods, name)) {
        unsupported_fault("dict method '" + std::string(name) + "' used without a call");
      }
      return Value::undefined(std::string(name));
    case Value::Kind::Namespace:
      if (const Value* found = object.namespace_attributes().find(name)) return *found;
      return Value::undefined(std::string(name));
    case Value::Kind::String:
      if (listed(kStrMethods, name)) {
        unsupported_fault("str method '" + std::string(name) + "' used without a call");
      }
      return Value::undefined(std::string(name));
    case Value::Kind::List:
      if (listed(kListMethods, name)) {
        unsupported_fault("list method '" + std::string(name) + "' used without a call");
      }
      return Value::undefined(std::string(name));
    default: return Value::undefined(std::string(name));
  }
}

Value get_item(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::Undefined: undefined_access(object);
    case Value::Kind::Dict:
      if (!key.is_string()) return Value::undefined(key.str());
      if (const Value* found = object.as_dict().find(key.as_string())) return *found;
      return get_attribute(object, key.as_string());
    case Value::Kind::Namespace:
      if (key.is_string()) return get_attribute(object, key.as_string());
      return Value::undefined(key.str());
    case Value::Kind::List:
      if (key.kind() == Value::Kind::Int || key.kind() == Value::Kind::Bool) {
        const int64_t index = key.kind() == Value::Kind::Int ? key.as_int() : key.as_bool();
        const auto pos = normalize_index(index, object.as_list().size());
        return pos ? object.as_list()[*pos] : Value::undefined(key.str());
      }
      if (key.is_string()) return get_attribute(object, key.as_string());
      return Value::undefined(key.str());
    case Value::Kind::String:
      if (key.kind() == Value::Kind::Int) {
        const std::u32string cps = decode_utf8(object.as_string());
        const auto pos = normalize_index(key.as_int(), cps.size());
        if (!pos) return Value::undefined(key.str());
        std::string one;
        append_utf8(one, cps[*pos]);
        return Value(std::move(one));
      }
      if (key.is_string()) return get_attribute(object, key.as_string());
      return Value::undefined(key.str());
    default: return Value::undefined(key.str());
  }
}

Value get_slice(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
                std::optional<int64_t> step) {
  if (object.kind() == Value::Kind::List) {
    const auto& list = object.as_list();
    List out;
    for (size_t pos : slice_positions(list.size(), start, stop, step)) out.push_back(list[pos]);
    return Value(std::move(out));
  }
  if (object.is_string()) {
    const std::u32string cps = decode_utf8(object.as_string());
    std::u32string out;
    for (size_t pos : slice_positions(cps.size(), start, stop, step)) out += cps[pos];
    return Value(encode_utf8(out));
  }
  if (object.is_undefined()) undefined_access(object);
  value_fault("'" + std::string(object.type_name()) + "' object is not subscriptable");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (!item.is_string()) {
        value_fault("'in <string>' requires string as left operand, not " +
                    std::string(item.type_name()));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      return std::find(container.as_list().begin(), container.as_list().end(), item) !=
             container.as_list().end();
    case Value::Kind::Dict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default:
      value_fault("argument of type '" + std::string(container.type_name()) + "' is not iterable");
  }
}

}  // namespace augur::chat
