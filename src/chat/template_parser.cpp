#include "chat/template_parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat/template_filters.h"
#include "common/error.h"

namespace augur::chat {
namespace {

// Jinja2 tags (and extension tags) this renderer does not implement: named as unsupported
// rather than as syntax errors, since a real template may use them.
constexpr std::string_view kUnsupportedTags[] = {
    "call", "filter", "include",    "import", "from",      "extends", "block",
    "do",   "with",   "autoescape", "trans",  "pluralize", "debug",   "print"};
// Jinja2 globals we do not provide.
constexpr std::string_view kUnsupportedGlobals[] = {"cycler", "joiner", "lipsum", "caller"};

std::string at(int line) {
  return "line " + std::to_string(line) + ": ";
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

  Body parse_all() {
    Body body = parse_body({});
    if (cur().kind != TokenKind::EndOfInput) {
      fail(cur().line, "unexpected '{% " + peek_tag_name() + " %}'");
    }
    return body;
  }

 private:
  const Token& cur() const { return tokens_[pos_]; }
  const Token& next_token() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  [[noreturn]] static void fail(int line, const std::string& what) {
    throw FormatError(at(line) + what);
  }
  [[noreturn]] static void unsupported(int line, const std::string& what) {
    throw Unsupported(at(line) + "unsupported " + what);
  }

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
    node->body = parse_body({"endmacro"});
    end_tag("endmacro");
    return node;
  }

  // ---- expressions, with Jinja2's precedence ----

  ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  ExprPtr make_binary(std::string op, ExprPtr left, ExprPtr right, int line) {
    auto e = make(ExprKind::Binary, line);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  bool at_expression_end() const {
    return cur().kind == TokenKind::VariableEnd || cur().kind == TokenKind::BlockEnd ||
           is_op(")") || is_op("]") || is_op("}") || cur().kind == TokenKind::EndOfInput;
  }

  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens = false) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool comma = false;
    while (true) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        comma = true;
        if (at_expression_end()) break;
      }
      if (explicit_parens && items.empty() && is_op(")")) break;  // ()
      items.push_back(parse_expression(with_condexpr));
      if (!is_op(",")) break;
    }
    if (items.size() == 1 && !comma) return std::move(items[0]);
    if (items.empty() && !explicit_parens)
      fail(line, "expected an expression, got " + describe(cur()));
    auto e = make(ExprKind::TupleLiteral, line);
    e->children = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    const int line = cur().line;
    ExprPtr expr = parse_or();
    if (!with_condexpr) return expr;
    while (skip_name("if")) {
      auto cond = make(ExprKind::Conditional, line);
      cond->children.push_back(parse_or());
      cond->children.push_back(std::move(expr));
      cond->children.push_back(skip_name("else") ? parse_expression(true) : nullptr);
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = cur().line;
      advance();
      left = make_binary("or", std::move(left), parse_and(), line);
    }
    return left;
  }
  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = cur().line;
      advance();
      left = make_binary("and", std::move(left), parse_not(), line);
    }
    return left;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      auto e = make(ExprKind::Unary, cur().line);
      advance();
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  // A comparison operator at the cursor ("not in" takes two tokens), or "".
  std::string comparison_op() const {
    if (cur().kind == TokenKind::Operator &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
         cur().text == "<=" || cur().text == ">=")) {
      return cur().text;
    }
    if (is_name("in")) return "in";
    if (is_name("not") && next_token().kind == TokenKind::Name && next_token().text == "in") {
      return "not in";
    }
    return "";
  }
  ExprPtr parse_compare() {
    ExprPtr left = parse_math1();
    const std::string op = comparison_op();
    if (op.empty()) return left;
    const int line = cur().line;
    advance();
    if (op == "not in") advance();
    left = make_binary(op, std::move(left), parse_math1(), line);
    if (!comparison_op().empty()) unsupported(cur().line, "chained comparison");
    return left;
  }
  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const int line = cur().line;
      std::string op = cur().text;
      advance();
      left = make_binary(op, std::move(left), parse_concat(), line);
    }
    return left;
  }
  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const int line = cur().line;
      advance();
      left = make_binary("~", std::move(left), parse_math2(), line);
    }
    return left;
  }
  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const int line = cur().line;
      std::string op = cur().text;
      advance();
      left = make_binary(op, std::move(left), parse_pow(), line);
    }
    return left;
  }
  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = cur().line;
      advance();
      left = make_binary("**", std::move(left), parse_unary(true), line);
    }
    return left;
  }
  ExprPtr parse_unary(bool with_filter) {
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make(ExprKind::Unary, cur().line);
      node->name = cur().text;
      advance();
      node->children.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    if (t.kind == TokenKind::Name) {
      auto e = make(ExprKind::Literal, line);
      if (t.text == "true" || t.text == "True") {
        e->literal = Value(true);
      } else if (t.text == "false" || t.text == "False") {
        e->literal = Value(false);
      } else if (t.text == "none" || t.text == "None") {
        e->literal = Value::none();
      } else {
        e->kind = ExprKind::Name;
        e->name = t.text;
      }
      advance();
      return e;
    }
    if (t.kind == TokenKind::String) {
      std::string text;
      while (cur().kind == TokenKind::String) {
        text += cur().text;  // adjacent literals concatenate
        advance();
      }
      auto e = make(ExprKind::Literal, line);
      e->literal = Value(std::move(text));
      return e;
    }
    if (t.kind == TokenKind::Integer || t.kind == TokenKind::Float) {
      auto e = make(ExprKind::Literal, line);
      e->literal = t.kind == TokenKind::Integer ? Value(t.int_value) : Value(t.float_value);
      advance();
      return e;
    }
    if (skip_op("(")) {
      ExprPtr inner = parse_tuple(true, /*explicit_parens=*/true);
      expect_op(")");
      return inner;
    }
    if (skip_op("[")) {
      auto e = make(ExprKind::ListLiteral, line);
      while (!skip_op("]")) {
        if (!e->children.empty()) {
          expect_op(",");
          if (skip_op("]")) break;
        }
        e->children.push_back(parse_expression(true));
      }
      return e;
    }
    if (skip_op("{")) {
      auto e = make(ExprKind::DictLiteral, line);
      while (!skip_op("}")) {
        if (!e->args.empty()) {
          expect_op(",");
          if (skip_op("}")) break;
        }
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->children.push_back(parse_expression(true));
      }
      return e;
    }
    fail(line, "unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node));
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const int line = cur().line;
    if (skip_op(".")) {
      if (cur().kind == TokenKind::Integer) {
        auto e = make(ExprKind::Subscript, line);
        auto index = make(ExprKind::Literal, line);
        index->literal = Value(cur().int_value);
        advance();
        e->children.push_back(std::move(node));
        e->children.push_back(std::move(index));
        return e;
      }
      auto e = make(ExprKind::Attribute, line);
      e->name = expect_name();
      e->children.push_back(std::move(node));
      return e;
    }
    expect_op("[");
    ExprPtr parts[3];
    bool is_slice = false;
    int part = 0;
    while (!is_op("]")) {
      if (skip_op(":")) {
        is_slice = true;
        if (++part > 2) fail(cur().line, "too many ':' in a slice");
        continue;
      }
      if (is_op(",")) unsupported(cur().line, "tuple subscript");
      if (parts[part]) fail(cur().line, "expected ']' or ':', got " + describe(cur()));
      parts[part] = parse_expression(true);
    }
    advance();
    if (!is_slice) {
      if (!parts[0]) fail(line, "empty subscript");
      auto e = make(ExprKind::Subscript, line);
      e->children.push_back(std::move(node));
      e->children.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(ExprKind::Slice, line);
    e->children.push_back(std::move(node));
    for (auto& p : parts) e->children.push_back(std::move(p));
    return e;
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    while (!skip_op(")")) {
      if (!e.args.empty() || !e.kwargs.empty()) {
        expect_op(",");
        if (skip_op(")")) break;
      }
      if (is_op("*") || is_op("**")) unsupported(cur().line, "*args/**kwargs in a call");
      if (cur().kind == TokenKind::Name && next_token().kind == TokenKind::Operator &&
          next_token().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail(cur().line, "positional argument after keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
  }

  ExprPtr parse_call(ExprPtr callee) {
    const int line = cur().line;
    ExprPtr e;
    if (callee->kind == ExprKind::Attribute) {
      e = make(ExprKind::MethodCall, callee->line);
      e->name = callee->name;
      e->children.push_back(std::move(callee->children[0]));
    } else {
      if (callee->kind == ExprKind::Name) {
        for (std::string_view global : kUnsupportedGlobals) {
          if (callee->name == global) unsupported(line, "function '" + callee->name + "'");
        }
      }
      e = make(ExprKind::Call, line);
      e->children.push_back(std::move(callee));
    }
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr node) {
    expect_op("|");
    const int line = cur().line;
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    if (!is_known_filter(name)) unsupported(line, "filter '" + name + "'");
    auto e = make(ExprKind::Filter, line);
    e->name = std::move(name);
    e->children.push_back(std::move(node));
    if (is_op("(")) parse_call_args(*e);
    return e;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = cur().line;
    advance();  // is
    auto e = make(ExprKind::Test, line);
    e->negated = skip_name("not");
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    if (!is_known_test(e->name)) unsupported(line, "test '" + e->name + "'");
    e->children.push_back(std::move(node));
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((cur().kind == TokenKind::Name || cur().kind == TokenKind::String ||
                cur().kind == TokenKind::Integer || cur().kind == TokenKind::Float || is_op("(") ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail(cur().line, "you cannot chain multiple tests with 'is'");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;  // for-loop bodies around the cursor, for break/continue
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens) {
  return Parser(tokens).parse_all();
}

}  // namespace augur::chat
