#include "chat/template_strings.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace augur::chat {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

bool in_set(char32_t c, std::u32string_view set) {
  return set.find(c) != std::u32string_view::npos;
}

}  // namespace

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    int extra = 0;
    char32_t cp = 0;
    if (lead < 0x80) {
      cp = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      extra = 1, cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2, cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      extra = 3, cp = lead & 0x07;
    } else {
      out.push_back(kReplacement);
      ++pos;
      continue;
    }
    if (pos + extra >= text.size()) {
      out.push_back(kReplacement);
      ++pos;
      continue;
    }
    bool ok = true;
    for (int k = 1; k <= extra; ++k) {
      const auto cont = static_cast<unsigned char>(text[pos + k]);
      if ((cont & 0xC0) != 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (cont & 0x3F);
    }
    if (!ok) {
      out.push_back(kReplacement);
      ++pos;
      continue;
    }
    out.push_back(cp);
    pos += 1 + extra;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t cp : code_points) append_utf8(out, cp);
  return out;
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

size_t code_point_count(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string python_strip(std::string_view text, std::optional<std::string_view> chars, bool left,
                         bool right) {
  const std::u32string cps = decode_utf8(text);
  const std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? in_set(c, set) : is_python_space(c); };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strip_it(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip_it(cps[end - 1])) --end;
  }
  return encode_utf8(std::u32string_view(cps).substr(begin, end - begin));
}

std::vector<std::string> python_split(std::string_view text, std::optional<std::string_view> sep,
                                      int64_t max_split) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) throw InvalidArgument("str.split(): empty separator");
    size_t start = 0;
    while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
      const size_t hit = text.find(*sep, start);
      if (hit == std::string_view::npos) break;
      parts.emplace_back(text.substr(start, hit - start));
      start = hit + sep->size();
    }
    parts.emplace_back(text.substr(start));
    return parts;
  }
  const std::u32string cps = decode_utf8(text);
  size_t pos = 0;
  while (true) {
    while (pos < cps.size() && is_python_space(cps[pos])) ++pos;
    if (pos == cps.size()) break;
    if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
      // Python keeps the remainder as is, trailing whitespace included.
      parts.push_back(encode_utf8(std::u32string_view(cps).substr(pos)));
      break;
    }
    size_t end = pos;
    while (end < cps.size() && !is_python_space(cps[end])) ++end;
    parts.push_back(encode_utf8(std::u32string_view(cps).substr(pos, end - pos)));
    pos = end;
  }
  return parts;
}

std::string python_replace(std::string_view text, std::string_view old_part,
                           std::string_view new_part, int64_t count) {
  std::string out;
  if (old_part.empty()) {
    // Python inserts `new` before every code point and at the end.
    const std::u32string cps = decode_utf8(text);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) out += new_part, ++done;
      append_utf8(out, cp);
    }
    if (count < 0 || done < count) out += new_part;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = text.find(old_part, start);
    if (hit == std::string_view::npos) break;
    out += text.substr(start, hit - start);
    out += new_part;
    start = hit + old_part.size();
    ++done;
  }
  out += text.substr(start);
  return out;
}

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.5e-07"
  std::string sign;
  if (sci[0] == '-') sign = "-", sci.erase(0, 1);
  const size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  // Python's repr: fixed notation for 1e-4 <= |x| < 1e16, else scientific.
  if (exponent >= -4 && exponent < 16) {
    std::string fixed;
    if (exponent < 0) {
      fixed = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exponent + 1) {
      fixed = digits + std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0') + ".0";
    } else {
      fixed = digits.substr(0, static_cast<size_t>(exponent + 1)) + "." +
              digits.substr(static_cast<size_t>(exponent + 1));
    }
    return sign + fixed;
  }
  std::string mantissa = digits.substr(0, 1);
  if (digits.size() > 1) mantissa += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return sign + mantissa + exp_buf;
}

std::string python_string_repr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : decode_utf8(text)) {
    if (cp == static_cast<char32_t>(quote) || cp == U'\\') {
      out += '\\';
      append_utf8(out, cp);
    } else if (cp == U'\n') {
      out += "\\n";
    } else if (cp == U'\r') {
      out += "\\r";
    } else if (cp == U'\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(cp));
      out += hex;
    } else {
      append_utf8(out, cp);
    }
  }
  out += quote;
  return out;
}

}  // namespace augur::chat
