#include "chat/template_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/template_strings.h"

namespace augur::chat {
namespace {

// json's py_encode_basestring: only '"', '\\' and control characters are escaped.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(c));
          out += hex;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

struct Dumper {
  const JsonDumpOptions& options;
  std::string item_separator;
  std::string key_separator;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int k = 0; k < level; ++k) out += *options.indent;
  }

  void dump(const Value& value, int level) {
    using Kind = Value::Kind;
    switch (value.kind()) {
      case Kind::None: out += "null"; return;
      case Kind::Bool: out += value.as_bool() ? "true" : "false"; return;
      case Kind::Int: out += std::to_string(value.as_int()); return;
      case Kind::Float: {
        const double d = value.as_float();
        if (std::isnan(d)) {
          out += "NaN";
        } else if (std::isinf(d)) {
          out += d > 0 ? "Infinity" : "-Infinity";
        } else {
          out += python_float_repr(d);
        }
        return;
      }
      case Kind::String: append_json_string(out, value.as_string()); return;
      case Kind::List: {
        const auto& list = value.as_list();
        if (list.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t idx = 0; idx < list.size(); ++idx) {
          if (idx) out += item_separator;
          if (options.indent) newline(level + 1);
          dump(list[idx], level + 1);
        }
        if (options.indent) newline(level);
        out += ']';
        return;
      }
      case Kind::Dict: {
        std::vector<const std::pair<std::string, Value>*> entries;
        for (const auto& entry : value.as_dict().entries) entries.push_back(&entry);
        if (entries.empty()) {
          out += "{}";
          return;
        }
        if (options.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto* a, const auto* b) { return a->first < b->first; });
        }
        out += '{';
        for (size_t idx = 0; idx < entries.size(); ++idx) {
          if (idx) out += item_separator;
          if (options.indent) newline(level + 1);
          append_json_string(out, entries[idx]->first);
          out += key_separator;
          dump(entries[idx]->second, level + 1);
        }
        if (options.indent) newline(level);
        out += '}';
        return;
      }
      default:
        value_fault("Object of type " + std::string(value.type_name()) +
                    " is not JSON serializable");
    }
  }
};

}  // namespace

std::string python_json_dumps(const Value& value, const JsonDumpOptions& options) {
  Dumper dumper{options, options.indent ? "," : ", ", ": ", {}};
  if (options.separators) {
    dumper.item_separator = options.separators->first;
    dumper.key_separator = options.separators->second;
  }
  dumper.dump(value, 0);
  return std::move(dumper.out);
}

}  // namespace augur::chat
