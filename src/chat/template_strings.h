// Python `str` semantics over UTF-8 for the chat-template renderer: code-point length, slicing,
// strip/split/replace as Python spells them, and Python's repr of floats and strings. Owns no
// state; knows nothing of templates (the value type and filters call into it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace augur::chat {

// Decodes UTF-8; an invalid byte becomes U+FFFD so a bad message cannot make us crash.
std::u32string decode_utf8(std::string_view text);
std::string encode_utf8(std::u32string_view code_points);
void append_utf8(std::string& out, char32_t code_point);

// Whitespace as Python's str.isspace() sees it (what strip() and split() remove).
bool is_python_space(char32_t code_point);

size_t code_point_count(std::string_view text);

// str.strip / lstrip / rstrip: `chars` absent strips whitespace, else any of its code points.
std::string python_strip(std::string_view text, std::optional<std::string_view> chars, bool left,
                         bool right);
// str.split(sep, maxsplit): absent `sep` splits on runs of whitespace and drops empty parts.
// Throws InvalidArgument for an empty separator, as Python raises ValueError.
std::vector<std::string> python_split(std::string_view text, std::optional<std::string_view> sep,
                                      int64_t max_split);
// str.replace(old, new, count); count < 0 replaces all.
std::string python_replace(std::string_view text, std::string_view old_part,
                           std::string_view new_part, int64_t count);

// repr(float) / str(float): shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string python_float_repr(double value);
// repr(str): quotes chosen as Python chooses them, escapes for control characters.
std::string python_string_repr(std::string_view text);

}  // namespace augur::chat
