// Jinja2's filters and tests in the chat-template subset (the list is in
// docs/chat-templates.md), with Python semantics. The parser asks which names exist, so an
// unknown filter or test fails at parse time; the evaluator applies them. `tojson` is Hugging
// Face's json.dumps(ensure_ascii=False, ...), not Jinja2's HTML-safe one.
#pragma once

#include <string_view>

#include "chat/template_value.h"

namespace augur::chat {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

// input | name(args). Throws ValueFault on a wrong type or argument.
Value apply_filter(std::string_view name, const Value& input, const CallArgs& args);
// input is name(args).
bool apply_test(std::string_view name, const Value& input, const CallArgs& args);

}  // namespace augur::chat
