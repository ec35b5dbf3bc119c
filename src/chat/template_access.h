// How a chat template reaches into values, as Jinja2's sandbox does it: `x.name` and `x[key]`
// (a missing key or attribute is undefined; anything of undefined is an error), Python slicing
// of strings (by code point) and lists, and the `in` operator. Method calls live in
// template_methods.h; this file only reads.
#pragma once

#include <optional>
#include <string_view>

#include "chat/template_value.h"

namespace augur::chat {

// x.name. A name that is a Python method of x's type (d.items without a call) is unsupported
// rather than silently treated as a key.
Value get_attribute(const Value& object, std::string_view name);
// x[key]
Value get_item(const Value& object, const Value& key);
// x[start:stop:step]; absent bounds are std::nullopt.
Value get_slice(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
                std::optional<int64_t> step);
// item in container: substring, list member, dict key; nothing is in undefined.
bool contains(const Value& container, const Value& item);

}  // namespace augur::chat
