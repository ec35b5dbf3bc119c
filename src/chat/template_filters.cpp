#include "chat/template_filters.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "chat/template_access.h"
#include "chat/template_args.h"
#include "chat/template_json.h"
#include "chat/template_strings.h"

namespace augur::chat {
namespace {

using FilterFn = std::function<Value(const Value&, const CallArgs&)>;
using TestFn = std::function<bool(const Value&, const CallArgs&)>;

const std::string& require_string(std::string_view filter, const Value& v) {
  if (!v.is_string()) {
    value_fault(std::string(filter) + ": expected a string, got " + std::string(v.type_name()));
  }
  return v.as_string();
}

// Case mapping is ASCII-only here; a non-ASCII string would need Unicode tables, so it is
// refused rather than mapped wrongly.
std::string ascii_case(std::string_view what, std::string_view text, int (*map)(int)) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      unsupported_fault(std::string(what) + " of a non-ASCII string");
    }
    c = static_cast<char>(map(static_cast<unsigned char>(c)));
  }
  return out;
}
int to_lower(int c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}
int to_upper(int c) {
  return c >= 'a' && c <= 'z' ? c - 32 : c;
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(code_point_count(v.as_string()));
    case Value::Kind::List: return static_cast<int64_t>(v.as_list().size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.as_dict().entries.size());
    default: value_fault("object of type '" + std::string(v.type_name()) + "' has no len()");
  }
}

// Jinja's attribute getter for selectattr/map/join: "a.b" walks items, digits index lists.
Value attribute_path(const Value& item, const std::string& path) {
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    current = digits ? get_item(current, Value(static_cast<int64_t>(std::stoll(part))))
                     : get_item(current, Value(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

CallArgs tail_args(const CallArgs& args, size_t skip) {
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(skip),
                         args.positional.end());
  rest.keyword = args.keyword;
  return rest;
}

// select / reject / selectattr / rejectattr.
Value select_items(std::string_view filter, const Value& input, const CallArgs& args,
                   bool by_attribute, bool keep_when) {
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty()) value_fault(std::string(filter) + "() needs an attribute");
    attribute = require_string(filter, args.positional[next++]);
  }
  std::string test;
  if (args.positional.size() > next) test = require_string(filter, args.positional[next++]);
  if (!test.empty() && !is_known_test(test)) unsupported_fault("test '" + test + "'");
  const CallArgs test_args = tail_args(args, next);
  List out;
  for (const Value& item : input.iterate()) {
    const Value subject = by_attribute ? attribute_path(item, attribute) : item;
    const bool passed = test.empty() ? subject.truthy() : apply_test(test, subject, test_args);
    if (passed == keep_when) out.push_back(item);
  }
  return Value(std::move(out));
}

Value map_items(const Value& input, const CallArgs& args) {
  List out;
  const auto attribute = std::find_if(args.keyword.begin(), args.keyword.end(),
                                      [](const auto& kw) { return kw.first == "attribute"; });
  if (attribute != args.keyword.end()) {
    const BoundArgs bound("map", args, {"attribute", "default"});
    const std::string path = bound.required(0).str();
    for (const Value& item : input.iterate()) {
      Value v = attribute_path(item, path);
      out.push_back(v.is_undefined() && bound.given(1) ? bound[1] : v);
    }
    return Value(std::move(out));
  }
  if (args.positional.empty()) value_fault("map() needs a filter name or attribute=");
  const std::string filter = require_string("map", args.positional[0]);
  if (!is_known_filter(filter)) unsupported_fault("filter '" + filter + "'");
  const CallArgs rest = tail_args(args, 1);
  for (const Value& item : input.iterate()) out.push_back(apply_filter(filter, item, rest));
  return Value(std::move(out));
}

// str.splitlines() boundaries, for indent().
std::vector<std::u32string> split_lines(const std::u32string& text) {
  std::vector<std::u32string> lines;
  std::u32string line;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const char32_t c = text[pos];
    const bool boundary = c == U'\n' || c == U'\r' || c == 0x0B || c == 0x0C || c == 0x1C ||
                          c == 0x1D || c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!boundary) {
      line += c;
      continue;
    }
    if (c == U'\r' && pos + 1 < text.size() && text[pos + 1] == U'\n') ++pos;
    lines.push_back(std::move(line));
    line.clear();
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

Value indent_filter(const Value& input, const CallArgs& args) {
  const BoundArgs bound("indent", args, {"width", "first", "blank"});
  std::string indention;
  if (bound.given(0) && bound[0].is_string()) {
    indention = bound[0].as_string();
  } else {
    indention.assign(static_cast<size_t>(std::max<int64_t>(0, bound.int_or(0, 4))), ' ');
  }
  const std::u32string indent32 = decode_utf8(indention);
  const auto lines = split_lines(decode_utf8(input.str() + "\n"));
  std::u32string out;
  if (bound.bool_or(2, false)) {
    for (size_t idx = 0; idx < lines.size(); ++idx) {
      if (idx) out += U"\n" + indent32;
      out += lines[idx];
    }
  } else if (!lines.empty()) {
    out = lines[0];
    for (size_t idx = 1; idx < lines.size(); ++idx) {
      out += U"\n";
      if (!lines[idx].empty()) out += indent32;
      out += lines[idx];
    }
  }
  if (bound.bool_or(1, false)) out = indent32 + out;
  return Value(encode_utf8(out));
}

Value tojson_filter(const Value& input, const CallArgs& args) {
  const BoundArgs bound("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  if (bound.bool_or(0, false)) unsupported_fault("tojson(ensure_ascii=True)");
  JsonDumpOptions options;
  if (bound.given(1) && !bound[1].is_none()) {
    if (bound[1].is_string()) {
      options.indent = bound[1].as_string();
    } else {
      options.indent =
          std::string(static_cast<size_t>(std::max<int64_t>(0, bound.int_or(1, 0))), ' ');
    }
  }
  if (bound.given(2) && !bound[2].is_none()) {
    const Value& seps = bound[2];
    if (seps.kind() != Value::Kind::List || seps.as_list().size() != 2 ||
        !seps.as_list()[0].is_string() || !seps.as_list()[1].is_string()) {
      value_fault("tojson(): separators must be a pair of strings");
    }
    options.separators = {seps.as_list()[0].as_string(), seps.as_list()[1].as_string()};
  }
  options.sort_keys = bound.bool_or(3, false);
  return Value(python_json_dumps(input, options));
}

Value number_filter(const Value& input, const CallArgs& args, bool to_int) {
  const BoundArgs bound(to_int ? "int" : "float", args, {"default", "base"});
  const Value fallback = bound.given(0) ? bound[0] : to_int ? Value(0) : Value(0.0);
  if (input.kind() == Value::Kind::Int || input.kind() == Value::Kind::Bool) {
    const int64_t i = input.kind() == Value::Kind::Int ? input.as_int() : input.as_bool();
    return to_int ? Value(i) : Value(static_cast<double>(i));
  }
  if (input.kind() == Value::Kind::Float) {
    return to_int ? Value(static_cast<int64_t>(input.as_float())) : input;
  }
  if (input.is_string()) {
    const std::string text = python_strip(input.as_string(), std::nullopt, true, true);
    try {
      size_t used = 0;
      if (to_int) {
        const int64_t i = std::stoll(text, &used, static_cast<int>(bound.int_or(1, 10)));
        if (used == text.size()) return Value(i);
        const double d = std::stod(text, &used);  // Jinja's int() accepts "3.7" via float
        if (used == text.size()) return Value(static_cast<int64_t>(d));
      } else {
        const double d = std::stod(text, &used);
        if (used == text.size()) return Value(d);
      }
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
  static const std::map<std::string, FilterFn, std::less<>> table = [] {
    std::map<std::string, FilterFn, std::less<>> t;
    t["trim"] = [](const Value& v, const CallArgs& a) {
      const BoundArgs bound("trim", a, {"chars"});
      const std::string chars = bound.string_or(0, "");
      return Value(python_strip(v.str(),
                                bound.given(0) && !bound[0].is_none()
                                    ? std::optional<std::string_view>(chars)
                                    : std::nullopt,
                                true, true));
    };
    t["length"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("length", a, {});
      return Value(length_of(v));
    };
    t["count"] = t["length"];
    t["string"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("string", a, {});
      return Value(v.str());
    };
    t["safe"] = t["string"];
    t["list"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("list", a, {});
      return Value(v.iterate());
    };
    t["items"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("items", a, {});
      if (v.is_undefined()) return Value(List{});
      if (v.kind() != Value::Kind::Dict) value_fault("items: expected a mapping");
      List out;
      for (const auto& [key, item] : v.as_dict().entries) out.push_back(Value(List{key, item}));
      return Value(std::move(out));
    };
    t["tojson"] = tojson_filter;
    t["join"] = [](const Value& v, const CallArgs& a) {
      const BoundArgs bound("join", a, {"d", "attribute"});
      const std::string separator = bound.string_or(0, "");
      std::string out;
      bool first = true;
      for (const Value& item : v.iterate()) {
        if (!first) out += separator;
        first = false;
        out += (bound.given(1) ? attribute_path(item, bound[1].str()) : item).str();
      }
      return Value(std::move(out));
    };
    t["select"] = [](const Value& v, const CallArgs& a) {
      return select_items("select", v, a, false, true);
    };
    t["reject"] = [](const Value& v, const CallArgs& a) {
      return select_items("reject", v, a, false, false);
    };
    t["selectattr"] = [](const Value& v, const CallArgs& a) {
      return select_items("selectattr", v, a, true, true);
    };
    t["rejectattr"] = [](const Value& v, const CallArgs& a) {
      return select_items("rejectattr", v, a, true, false);
    };
    t["map"] = map_items;
    t["first"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("first", a, {});
      const List items = v.iterate();
      return items.empty() ? Value::undefined("first") : items.front();
    };
    t["last"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("last", a, {});
      const List items = v.iterate();
      return items.empty() ? Value::undefined("last") : items.back();
    };
    t["reverse"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("reverse", a, {});
      if (v.is_string()) return get_slice(v, std::nullopt, std::nullopt, -1);
      List items = v.iterate();
      std::reverse(items.begin(), items.end());
      return Value(std::move(items));
    };
    t["lower"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("lower", a, {});
      return Value(ascii_case("lower", v.str(), to_lower));
    };
    t["upper"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("upper", a, {});
      return Value(ascii_case("upper", v.str(), to_upper));
    };
    t["capitalize"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("capitalize", a, {});
      std::string s = ascii_case("capitalize", v.str(), to_lower);
      if (!s.empty()) s[0] = static_cast<char>(to_upper(s[0]));
      return Value(std::move(s));
    };
    t["replace"] = [](const Value& v, const CallArgs& a) {
      const BoundArgs bound("replace", a, {"old", "new", "count"});
      return Value(python_replace(v.str(), require_string("replace", bound.required(0)),
                                  require_string("replace", bound.required(1)),
                                  bound.int_or(2, -1)));
    };
    t["default"] = [](const Value& v, const CallArgs& a) {
      const BoundArgs bound("default", a, {"default_value", "boolean"});
      const bool use_default = bound.bool_or(1, false) ? !v.truthy() : v.is_undefined();
      return use_default ? (bound.given(0) ? bound[0] : Value("")) : v;
    };
    t["d"] = t["default"];
    t["int"] = [](const Value& v, const CallArgs& a) { return number_filter(v, a, true); };
    t["float"] = [](const Value& v, const CallArgs& a) { return number_filter(v, a, false); };
    t["abs"] = [](const Value& v, const CallArgs& a) {
      BoundArgs("abs", a, {});
      if (v.kind() == Value::Kind::Int) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
      return Value(std::fabs(v.as_number()));
    };
    t["indent"] = indent_filter;
    return t;
  }();
  return table;
}

bool is_ascii_cased(const Value& v, bool lower) {
  if (!v.is_string()) return false;
  bool cased = false;
  for (char c : v.as_string()) {
    if (static_cast<unsigned char>(c) >= 0x80) unsupported_fault("case test of a non-ASCII string");
    if ((lower && c >= 'A' && c <= 'Z') || (!lower && c >= 'a' && c <= 'z')) return false;
    cased |= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
  return cased;
}

TestFn compare_test(std::string_view name, std::function<bool(const Value&, const Value&)> op) {
  return [name, op](const Value& v, const CallArgs& a) {
    const BoundArgs bound(name, a, {"other"});
    return op(v, bound.required(0));
  };
}

const std::map<std::string, TestFn, std::less<>>& tests() {
  static const std::map<std::string, TestFn, std::less<>> table = [] {
    std::map<std::string, TestFn, std::less<>> t;
    auto unary = [](std::string_view name, std::function<bool(const Value&)> fn) -> TestFn {
      return [name, fn](const Value& v, const CallArgs& a) {
        BoundArgs(name, a, {});
        return fn(v);
      };
    };
    using K = Value::Kind;
    t["defined"] = unary("defined", [](const Value& v) { return !v.is_undefined(); });
    t["undefined"] = unary("undefined", [](const Value& v) { return v.is_undefined(); });
    t["none"] = unary("none", [](const Value& v) { return v.is_none(); });
    t["string"] = unary("string", [](const Value& v) { return v.is_string(); });
    t["mapping"] = unary("mapping", [](const Value& v) { return v.kind() == K::Dict; });
    t["iterable"] = unary("iterable", [](const Value& v) {
      return v.kind() == K::List || v.kind() == K::Dict || v.is_string() || v.is_undefined();
    });
    t["sequence"] = t["iterable"];
    t["number"] =
        unary("number", [](const Value& v) { return v.is_number() || v.kind() == K::Bool; });
    t["integer"] = unary("integer", [](const Value& v) { return v.kind() == K::Int; });
    t["float"] = unary("float", [](const Value& v) { return v.kind() == K::Float; });
    t["boolean"] = unary("boolean", [](const Value& v) { return v.kind() == K::Bool; });
    t["true"] = unary("true", [](const Value& v) { return v.kind() == K::Bool && v.as_bool(); });
    t["false"] = unary("false", [](const Value& v) { return v.kind() == K::Bool && !v.as_bool(); });
    t["callable"] = unary("callable", [](const Value& v) { return v.kind() == K::Function; });
    t["lower"] = unary("lower", [](const Value& v) { return is_ascii_cased(v, true); });
    t["upper"] = unary("upper", [](const Value& v) { return is_ascii_cased(v, false); });
    t["odd"] = unary("odd", [](const Value& v) {
      if (v.kind() != K::Int) value_fault("odd: expected an int");
      return v.as_int() % 2 != 0;
    });
    t["even"] = unary("even", [](const Value& v) {
      if (v.kind() != K::Int) value_fault("even: expected an int");
      return v.as_int() % 2 == 0;
    });
    t["divisibleby"] = [](const Value& v, const CallArgs& a) {
      const BoundArgs bound("divisibleby", a, {"num"});
      const int64_t num = bound.int_or(0, 1);
      if (v.kind() != K::Int || num == 0) value_fault("divisibleby: expected non-zero ints");
      return v.as_int() % num == 0;
    };
    t["eq"] = compare_test("eq", [](const Value& x, const Value& y) { return x == y; });
    t["equalto"] = t["=="] = t["eq"];
    t["ne"] = t["!="] = compare_test("ne", [](const Value& x, const Value& y) { return x != y; });
    t["lt"] = t["<"] = t["lessthan"] = compare_test("lt", less_than);
    t["gt"] = t[">"] = t["greaterthan"] =
        compare_test("gt", [](const Value& x, const Value& y) { return less_than(y, x); });
    t["le"] = t["<="] =
        compare_test("le", [](const Value& x, const Value& y) { return !less_than(y, x); });
    t["ge"] = t[">="] =
        compare_test("ge", [](const Value& x, const Value& y) { return !less_than(x, y); });
    t["in"] = compare_test("in", [](const Value& x, const Value& y) { return contains(y, x); });
    t["sameas"] = compare_test("sameas", [](const Value& x, const Value& y) {
      if (x.kind() == K::None || x.kind() == K::Bool || y.kind() == K::None ||
          y.kind() == K::Bool) {
        return x.kind() == y.kind() && x == y;
      }
      unsupported_fault("sameas test on " + std::string(x.type_name()));
    });
    return t;
  }();
  return table;
}

}  // namespace

bool is_known_filter(std::string_view name) {
  return filters().count(name) != 0;
}
bool is_known_test(std::string_view name) {
  return tests().count(name) != 0;
}

Value apply_filter(std::string_view name, const Value& input, const CallArgs& args) {
  const auto it = filters().find(name);
  if (it == filters().end()) unsupported_fault("filter '" + std::string(name) + "'");
  return it->second(input, args);
}

bool apply_test(std::string_view name, const Value& input, const CallArgs& args) {
  const auto it = tests().find(name);
  if (it == tests().end()) unsupported_fault("test '" + std::string(name) + "'");
  return it->second(input, args);
}

}  // namespace augur::chat
