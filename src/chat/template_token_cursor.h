// The read position in a template's tokens, shared by the expression and statement parsers:
// look-ahead, matching of operators and names, and the errors both raise ("line N: ...").
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "chat/template_lexer.h"
#include "common/error.h"

namespace augur::chat {

class TokenCursor {
 public:
  explicit TokenCursor(const std::vector<Token>& tokens) : tokens_(tokens) {}

 protected:
  const Token& cur() const { return tokens_[pos_]; }
  const Token& next_token() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  [[noreturn]] static void fail(int line, const std::string& what) {
    throw FormatError("line " + std::to_string(line) + ": " + what);
  }
  [[noreturn]] static void unsupported(int line, const std::string& what) {
    throw Unsupported("line " + std::to_string(line) + ": unsupported " + what);
  }

  // How deep the tree being parsed nests: statements inside statements, and expressions with
  // every operator of a chain (a + b + c nests as deep as it is long). Past kMaxNesting the
  // template is refused, so neither this recursive parser nor the evaluator walking the tree can
  // exhaust the stack on a hostile template; real chat templates nest about ten deep.
  static constexpr int kMaxNesting = 100;
  class Nesting {
   public:
    explicit Nesting(TokenCursor& cursor) : cursor_(cursor), saved_(cursor.depth_) {}
    ~Nesting() { cursor_.depth_ = saved_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
    // One level deeper until this scope ends.
    void deepen(int line) {
      if (++cursor_.depth_ > kMaxNesting)
        unsupported(line, "nesting deeper than " + std::to_string(kMaxNesting) + " levels");
    }

   private:
    TokenCursor& cursor_;
    int saved_;
  };

  bool is_op(std::string_view op) const {
    return cur().kind == TokenKind::Operator && cur().text == op;
  }
  bool is_name(std::string_view name) const {
    return cur().kind == TokenKind::Name && cur().text == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case TokenKind::VariableEnd: return "end of expression '}}'";
      case TokenKind::BlockEnd: return "end of tag '%}'";
      case TokenKind::EndOfInput: return "end of template";
      case TokenKind::String: return "string literal";
      case TokenKind::Text: return "text";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op))
      fail(cur().line, "expected '" + std::string(op) + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().kind != TokenKind::Name) fail(cur().line, "expected a name, got " + describe(cur()));
    std::string name = cur().text;
    advance();
    return name;
  }
  void expect_block_end() {
    if (cur().kind != TokenKind::BlockEnd) {
      fail(cur().line, "expected end of tag '%}', got " + describe(cur()));
    }
    advance();
  }
  std::string peek_tag_name() const {
    return next_token().kind == TokenKind::Name ? next_token().text : "";
  }

  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int macro_depth_ = 0;  // macro bodies around the cursor: varargs/kwargs are not provided
};

}  // namespace augur::chat
