// Splits chat-template source into tokens the way Jinja2's lexer does for Hugging Face's
// environment (trim_blocks, lstrip_blocks, keep_trailing_newline off): text between tags with
// whitespace control ({%- -%} {{- -}} {#- -#}, `+` to opt out) already applied, comments
// dropped, and the tokens inside {{ }} and {% %}. Knows nothing of statements or expressions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace augur::chat {

enum class TokenKind {
  Text,
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,
  String,   // text holds the decoded literal
  Integer,  // int_value
  Float,    // float_value
  Operator,
  EndOfInput,
};

struct Token {
  TokenKind kind = TokenKind::EndOfInput;
  std::string text;
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0.0;
};

// Throws FormatError with the line for an unterminated tag, comment or string and for a
// character no token starts with; Unsupported for {% raw %}.
[[nodiscard]] std::vector<Token> tokenize_template(std::string_view source);

}  // namespace augur::chat
