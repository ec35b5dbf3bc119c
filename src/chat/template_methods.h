// Python methods a chat template may call on its values: str.strip/lstrip/rstrip/split/
// startswith/endswith/replace/lower/upper/title/capitalize/find/count/splitlines/join, dict.items/
// keys/values/get, and a function held by a dict or namespace (loop.cycle). Mutating methods
// are refused as the immutable sandbox refuses them; any other name is Unsupported.
#pragma once

#include <string_view>

#include "chat/template_value.h"

namespace augur::chat {

Value call_method(const Value& object, std::string_view name, const CallArgs& args);

}  // namespace augur::chat
