#include "chat/template_parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat/template_expression_parser.h"
#include "common/error.h"

namespace augur::chat {
namespace {

// Jinja2 tags (and extension tags) this renderer does not implement: named as unsupported
// rather than as syntax errors, since a real template may use them.
constexpr std::string_view kUnsupportedTags[] = {
    "call", "filter", "include",    "import", "from",      "extends", "block",
    "do",   "with",   "autoescape", "trans",  "pluralize", "debug",   "print"};

class Parser : ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  Body parse_all() {
    Body body = parse_body({});
    if (cur().kind != TokenKind::EndOfInput) {
      fail(cur().line, "unexpected '{% " + peek_tag_name() + " %}'");
    }
    return body;
  }

 private:
  // Statements until one of `end_tags` opens a tag; the caller consumes that tag.
  Body parse_body(std::initializer_list<std::string_view> end_tags) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == TokenKind::EndOfInput) {
        if (end_tags.size() != 0) {
          fail(t.line, "unexpected end of template, expected '{% " +
                           std::string(*(end_tags.end() - 1)) + " %}'");
        }
        return body;
      }
      if (t.kind == TokenKind::Text) {
        auto node = std::make_unique<Node>();
        node->kind = NodeKind::Text;
        node->line = t.line;
        node->text = t.text;
        body.push_back(std::move(node));
        advance();
      } else if (t.kind == TokenKind::VariableBegin) {
        auto node = std::make_unique<Node>();
        node->kind = NodeKind::Output;
        node->line = t.line;
        advance();
        node->expr = parse_tuple(true);
        if (cur().kind != TokenKind::VariableEnd) {
          fail(cur().line, "expected end of expression '}}', got " + describe(cur()));
        }
        advance();
        body.push_back(std::move(node));
      } else if (t.kind == TokenKind::BlockBegin) {
        const std::string name = peek_tag_name();
        if (std::find(end_tags.begin(), end_tags.end(), name) != end_tags.end()) return body;
        advance();
        body.push_back(parse_statement());
      } else {
        fail(t.line, "unexpected " + describe(t));
      }
    }
  }

  NodePtr parse_statement() {
    const int line = cur().line;
    Nesting nesting(*this);
    nesting.deepen(line);
    if (cur().kind != TokenKind::Name) fail(line, "expected a tag name, got " + describe(cur()));
    const std::string tag = cur().text;
    advance();
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail(line, "'" + tag + "' outside a for loop");
      auto node = std::make_unique<Node>();
      node->kind = tag == "break" ? NodeKind::Break : NodeKind::Continue;
      node->line = line;
      expect_block_end();
      return node;
    }
    if (tag == "generation") {
      // transformers' AssistantTracker tag: renders its body unchanged.
      auto node = std::make_unique<Node>();
      node->kind = NodeKind::Scope;
      node->line = line;
      expect_block_end();
      node->body = parse_body({"endgeneration"});
      end_tag("endgeneration");
      return node;
    }
    for (std::string_view unsupported_tag : kUnsupportedTags) {
      if (tag == unsupported_tag) unsupported(line, "tag '" + tag + "'");
    }
    fail(line, "unknown tag '" + tag + "'");
  }

  void end_tag(std::string_view name) {
    advance();  // the BlockBegin the body stopped at
    if (!skip_name(name)) fail(cur().line, "expected '" + std::string(name) + "'");
    expect_block_end();
  }

  NodePtr parse_if(int line) {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::If;
    node->line = line;
    node->expr = parse_tuple(true);
    expect_block_end();
    node->body = parse_body({"elif", "else", "endif"});
    advance();  // BlockBegin
    const std::string tag = expect_name();
    if (tag == "elif") {
      node->else_body.push_back(parse_if(tokens_[pos_ - 1].line));
      return node;  // the nested if consumed endif
    }
    if (tag == "else") {
      expect_block_end();
      node->else_body = parse_body({"endif"});
      advance();
      expect_name();
    }
    expect_block_end();
    return node;
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    const bool paren = skip_op("(");
    do {
      targets.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return targets;
  }

  NodePtr parse_for(int line) {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::For;
    node->line = line;
    node->targets = parse_targets();
    if (!skip_name("in")) fail(cur().line, "expected 'in' in a for loop, got " + describe(cur()));
    node->expr = parse_tuple(false);
    if (skip_name("if")) node->condition = parse_tuple(true);
    if (is_name("recursive")) unsupported(cur().line, "recursive for loop");
    expect_block_end();
    ++loop_depth_;
    node->body = parse_body({"else", "endfor"});
    --loop_depth_;
    advance();
    if (expect_name() == "else") {
      expect_block_end();
      node->else_body = parse_body({"endfor"});
      advance();
      expect_name();
    }
    expect_block_end();
    return node;
  }

  NodePtr parse_set(int line) {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::Set;
    node->line = line;
    node->targets.push_back(expect_name());
    if (skip_op(".")) {
      node->attribute = expect_name();
    } else {
      while (skip_op(",")) node->targets.push_back(expect_name());
    }
    if (skip_op("=")) {
      node->expr = parse_tuple(true);
      expect_block_end();
      return node;
    }
    if (is_op("|")) unsupported(cur().line, "filtered block set");
    if (node->targets.size() != 1 || !node->attribute.empty()) {
      fail(cur().line, "expected '=' in a set tag");
    }
    expect_block_end();
    node->kind = NodeKind::SetBlock;
    node->body = parse_body({"endset"});
    end_tag("endset");
    return node;
  }

  NodePtr parse_macro(int line) {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::Macro;
    node->line = line;
    node->text = expect_name();
    expect_op("(");
    while (!skip_op(")")) {
      if (!node->targets.empty()) expect_op(",");
      if (is_op("*") || is_op("**")) unsupported(cur().line, "variadic macro parameters");
      node->targets.push_back(expect_name());
      node->defaults.push_back(skip_op("=") ? parse_expression(true) : nullptr);
    }
    expect_block_end();
    ++macro_depth_;
    node->body = parse_body({"endmacro"});
    --macro_depth_;
    end_tag("endmacro");
    return node;
  }

  int loop_depth_ = 0;  // for-loop bodies around the cursor, for break/continue
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens) {
  return Parser(tokens).parse_all();
}

}  // namespace augur::chat
