#include "chat/template_lexer.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "chat/template_strings.h"
#include "common/error.h"

namespace augur::chat {
namespace {

[[noreturn]] void syntax_error(int line, const std::string& what) {
  throw FormatError("line " + std::to_string(line) + ": " + what);
}

// Jinja2 turns \r\n and \r into \n and drops one trailing newline (keep_trailing_newline off).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t pos = 0; pos < source.size(); ++pos) {
    if (source[pos] == '\r') {
      out += '\n';
      if (pos + 1 < source.size() && source[pos + 1] == '\n') ++pos;
    } else {
      out += source[pos];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Byte length of the whitespace code point at `pos` (Python's \s), or 0.
size_t space_at(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return is_python_space(lead) ? 1 : 0;
  size_t len = (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : 4;
  if (pos + len > text.size()) return 0;
  const std::u32string cp = decode_utf8(text.substr(pos, len));
  return cp.size() == 1 && is_python_space(cp[0]) ? len : 0;
}

bool all_space(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = space_at(text, pos);
    if (!len) return false;
    pos += len;
  }
  return true;
}

int count_newlines(std::string_view text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// A Jinja string literal: Python's unicode-escape decoding of the text between the quotes.
std::string decode_string_literal(std::string_view body, int line) {
  std::string out;
  for (size_t pos = 0; pos < body.size(); ++pos) {
    const char c = body[pos];
    if (c != '\\' || pos + 1 >= body.size()) {
      out += c;
      continue;
    }
    const char e = body[++pos];
    auto hex_escape = [&](size_t digits) {
      if (pos + digits >= body.size()) {
        syntax_error(line, "truncated \\" + std::string(1, e) + " escape in a string literal");
      }
      uint32_t cp = 0;
      const auto res =
          std::from_chars(body.data() + pos + 1, body.data() + pos + 1 + digits, cp, 16);
      if (res.ptr != body.data() + pos + 1 + digits) {
        syntax_error(line, "bad \\" + std::string(1, e) + " escape in a string literal");
      }
      append_utf8(out, cp);
      pos += digits;
    };
    switch (e) {
      case '\n': break;  // line continuation
      case '\\':
      case '\'':
      case '"': out += e; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case 'x': hex_escape(2); break;
      case 'u': hex_escape(4); break;
      case 'U': hex_escape(8); break;
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = static_cast<uint32_t>(e - '0');
          for (int k = 0;
               k < 2 && pos + 1 < body.size() && body[pos + 1] >= '0' && body[pos + 1] <= '7';
               ++k) {
            cp = cp * 8 + static_cast<uint32_t>(body[++pos] - '0');
          }
          append_utf8(out, cp);
        } else if (e == 'N') {
          throw Unsupported("line " + std::to_string(line) +
                            ": unsupported \\N{...} escape in a string literal");
        } else {
          out += '\\';  // Python keeps unknown escapes as written
          out += e;
        }
    }
  }
  return out;
}

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
      if (tag == std::string::npos) {
        emit_text(text);
        break;
      }
      const char kind = src_[tag + 1];
      const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')
                            ? src_[tag + 2]
                            : '\0';
      const int text_lines = count_newlines(text);
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0) {
          size_t start = end - 1;
          while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
          if (space_at(text, start) != end - start) break;
          end = start;
        }
        text = text.substr(0, end);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: a block or comment tag alone after indentation takes it away.
        const size_t line_pos = text.rfind('\n') + 1;  // npos + 1 == 0
        if ((line_pos > 0 || line_starting) && all_space(text.substr(line_pos))) {
          text = text.substr(0, line_pos);
        }
      }
      emit_text(text);
      line_ += text_lines;
      pos_ = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        line_starting = lex_comment();
      } else {
        line_starting = lex_tag(kind == '{');
      }
    }
    tokens_.push_back({TokenKind::EndOfInput, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t pos = src_.find('{', from); pos != std::string::npos;
         pos = src_.find('{', pos + 1)) {
      if (pos + 1 < src_.size() && std::strchr("{%#", src_[pos + 1]) && src_[pos + 1] != '\0') {
        return pos;
      }
    }
    return std::string::npos;
  }

  void emit_text(std::string_view text) {
    if (!text.empty()) tokens_.push_back({TokenKind::Text, std::string(text), line_});
  }

  // After `-%}` / `-#}` / `-}}`: all whitespace goes. Returns whether it ended on a newline.
  bool skip_following_space() {
    bool newline = false;
    while (size_t len = space_at(src_, pos_)) {
      newline = src_[pos_] == '\n';
      line_ += src_[pos_] == '\n';
      pos_ += len;
    }
    return newline;
  }

  // After `%}` / `#}`: trim_blocks removes one newline.
  bool trim_block_newline() {
    if (pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
      return true;
    }
    return false;
  }

  bool lex_comment() {
    const int start_line = line_;
    for (size_t pos = pos_; pos + 1 < src_.size(); ++pos) {
      const bool signed_end =
          (src_[pos] == '-' || src_[pos] == '+') && src_.compare(pos + 1, 2, "#}") == 0;
      if (!signed_end && src_.compare(pos, 2, "#}") != 0) continue;
      line_ += count_newlines(std::string_view(src_).substr(pos_, pos - pos_));
      pos_ = pos + (signed_end ? 3 : 2);
      if (signed_end && src_[pos] == '-') return skip_following_space();
      if (signed_end) return false;
      return trim_block_newline();
    }
    syntax_error(start_line, "missing end of comment tag");
  }

  // Tokens up to the matching }} or %}. Returns whether the end tag consumed a newline.
  bool lex_tag(bool variable) {
    const int start_line = line_;
    tokens_.push_back({variable ? TokenKind::VariableBegin : TokenKind::BlockBegin, "", line_});
    int depth = 0;  // open ( [ {: an end tag only counts outside them, as in Jinja
    bool first_name = true;
    while (true) {
      while (size_t len = space_at(src_, pos_)) {
        line_ += src_[pos_] == '\n';
        pos_ += len;
      }
      if (pos_ >= src_.size()) {
        syntax_error(start_line, variable ? "missing '}}' to end the expression"
                                          : "missing '%}' to end the tag");
      }
      if (depth == 0 && end_tag(variable)) {
        const bool minus = src_[pos_] == '-';
        const bool plus = src_[pos_] == '+';
        pos_ += (minus || plus) ? 3 : 2;
        tokens_.push_back({variable ? TokenKind::VariableEnd : TokenKind::BlockEnd, "", line_});
        if (minus) return skip_following_space();
        if (variable || plus) return false;
        return trim_block_newline();
      }
      const char c = src_[pos_];
      if (is_name_start(c)) {
        size_t end = pos_;
        while (end < src_.size() && (is_name_start(src_[end]) || is_digit(src_[end]))) ++end;
        std::string name = src_.substr(pos_, end - pos_);
        if (!variable && first_name && name == "raw") {
          throw Unsupported("line " + std::to_string(line_) + ": unsupported tag 'raw'");
        }
        tokens_.push_back({TokenKind::Name, std::move(name), line_});
        pos_ = end;
      } else if (is_digit(c)) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        lex_operator(depth);
      }
      first_name = false;
    }
  }

  bool end_tag(bool variable) const {
    const char* close = variable ? "}}" : "%}";
    if (src_.compare(pos_, 2, close) == 0) return true;
    if (src_[pos_] == '-' && src_.compare(pos_ + 1, 2, close) == 0) return true;
    return !variable && src_[pos_] == '+' && src_.compare(pos_ + 1, 2, close) == 0;
  }

  void lex_number() {
    size_t end = pos_;
    std::string digits;
    auto take_digits = [&] {
      while (end < src_.size() && (is_digit(src_[end]) || src_[end] == '_')) {
        if (src_[end] != '_') digits += src_[end];
        ++end;
      }
    };
    take_digits();
    bool is_float = false;
    if (end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1]) &&
        !(pos_ > 0 && src_[pos_ - 1] == '.')) {
      is_float = true;
      digits += '.';
      ++end;
      take_digits();
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t exp = end + 1;
      if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
      if (exp < src_.size() && is_digit(src_[exp])) {
        is_float = true;
        digits += 'e';
        digits += src_.substr(end + 1, exp - end - 1);
        end = exp;
        take_digits();
      }
    }
    Token token{is_float ? TokenKind::Float : TokenKind::Integer, digits, line_};
    if (is_float) {
      // strtod, not stod: out of range is Python's float() result (inf, or 0 for a tiny
      // exponent), not an exception.
      token.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      const auto res =
          std::from_chars(digits.data(), digits.data() + digits.size(), token.int_value);
      if (res.ec != std::errc()) {
        throw Unsupported("line " + std::to_string(line_) + ": integer literal " + digits +
                          " does not fit in 64 bits");
      }
    }
    tokens_.push_back(std::move(token));
    pos_ = end;
  }

  void lex_string(char quote) {
    size_t end = pos_ + 1;
    while (end < src_.size() && src_[end] != quote) end += src_[end] == '\\' ? 2 : 1;
    if (end >= src_.size()) syntax_error(line_, "unterminated string literal");
    const std::string_view body = std::string_view(src_).substr(pos_ + 1, end - pos_ - 1);
    tokens_.push_back({TokenKind::String, decode_string_literal(body, line_), line_});
    line_ += count_newlines(body);
    pos_ = end + 1;
  }

  void lex_operator(int& depth) {
    static constexpr const char* kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
    for (const char* op : kTwoChar) {
      if (src_.compare(pos_, 2, op) == 0) {
        tokens_.push_back({TokenKind::Operator, op, line_});
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    if (!std::strchr("+-/*%~[](){}<>=.:|,;", c)) {
      syntax_error(line_, "unexpected character '" + std::string(1, c) + "' in a tag");
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    tokens_.push_back({TokenKind::Operator, std::string(1, c), line_});
    ++pos_;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize_template(std::string_view source) {
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace augur::chat
