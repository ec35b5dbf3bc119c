// The `tojson` filter as Hugging Face defines it for chat templates: Python's
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys),
// byte for byte (escapes, float repr, indentation, separators). Nothing else serializes here.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "chat/template_value.h"

namespace augur::chat {

struct JsonDumpOptions {
  std::optional<std::string> indent;  // absent: one line; else the text of one indent level
  std::optional<std::pair<std::string, std::string>> separators;  // (item, key) separators
  bool sort_keys = false;
};

// Throws ValueFault for values JSON cannot hold (undefined, namespace, function).
std::string python_json_dumps(const Value& value, const JsonDumpOptions& options);

}  // namespace augur::chat
