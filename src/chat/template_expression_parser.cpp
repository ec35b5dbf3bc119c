#include "chat/template_expression_parser.h"

#include "chat/template_filters.h"

namespace augur::chat {
namespace {

// Jinja2 globals we do not provide.
constexpr std::string_view kUnsupportedGlobals[] = {"cycler", "joiner", "lipsum", "caller"};

}  // namespace

ExprPtr ExpressionParser::make(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}
ExprPtr ExpressionParser::make_binary(std::string op, ExprPtr left, ExprPtr right, int line) {
  auto e = make(ExprKind::Binary, line);
  e->name = std::move(op);
  e->children.push_back(std::move(left));
  e->children.push_back(std::move(right));
  return e;
}

bool ExpressionParser::at_expression_end() const {
  return cur().kind == TokenKind::VariableEnd || cur().kind == TokenKind::BlockEnd || is_op(")") ||
         is_op("]") || is_op("}") || cur().kind == TokenKind::EndOfInput;
}

ExprPtr ExpressionParser::parse_tuple(bool with_condexpr, bool explicit_parens) {
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

ExprPtr ExpressionParser::parse_expression(bool with_condexpr) {
  const int line = cur().line;
  Nesting nesting(*this);
  nesting.deepen(line);
  ExprPtr expr = parse_or();
  if (!with_condexpr) return expr;
  while (skip_name("if")) {
    nesting.deepen(line);
    auto cond = make(ExprKind::Conditional, line);
    cond->children.push_back(parse_or());
    cond->children.push_back(std::move(expr));
    cond->children.push_back(skip_name("else") ? parse_expression(true) : nullptr);
    expr = std::move(cond);
  }
  return expr;
}

ExprPtr ExpressionParser::parse_or() {
  Nesting nesting(*this);
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const int line = cur().line;
    nesting.deepen(line);
    advance();
    left = make_binary("or", std::move(left), parse_and(), line);
  }
  return left;
}
ExprPtr ExpressionParser::parse_and() {
  Nesting nesting(*this);
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const int line = cur().line;
    nesting.deepen(line);
    advance();
    left = make_binary("and", std::move(left), parse_not(), line);
  }
  return left;
}
ExprPtr ExpressionParser::parse_not() {
  if (is_name("not")) {
    Nesting nesting(*this);
    nesting.deepen(cur().line);
    auto e = make(ExprKind::Unary, cur().line);
    advance();
    e->name = "not";
    e->children.push_back(parse_not());
    return e;
  }
  return parse_compare();
}
// A comparison operator at the cursor ("not in" takes two tokens), or "".
std::string ExpressionParser::comparison_op() const {
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
ExprPtr ExpressionParser::parse_compare() {
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
ExprPtr ExpressionParser::parse_math1() {
  Nesting nesting(*this);
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const int line = cur().line;
    nesting.deepen(line);
    std::string op = cur().text;
    advance();
    left = make_binary(op, std::move(left), parse_concat(), line);
  }
  return left;
}
ExprPtr ExpressionParser::parse_concat() {
  Nesting nesting(*this);
  ExprPtr left = parse_math2();
  while (is_op("~")) {
    const int line = cur().line;
    nesting.deepen(line);
    advance();
    left = make_binary("~", std::move(left), parse_math2(), line);
  }
  return left;
}
ExprPtr ExpressionParser::parse_math2() {
  Nesting nesting(*this);
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const int line = cur().line;
    nesting.deepen(line);
    std::string op = cur().text;
    advance();
    left = make_binary(op, std::move(left), parse_pow(), line);
  }
  return left;
}
ExprPtr ExpressionParser::parse_pow() {
  Nesting nesting(*this);
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const int line = cur().line;
    nesting.deepen(line);
    advance();
    left = make_binary("**", std::move(left), parse_unary(true), line);
  }
  return left;
}
ExprPtr ExpressionParser::parse_unary(bool with_filter) {
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    Nesting nesting(*this);
    nesting.deepen(cur().line);
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

ExprPtr ExpressionParser::parse_primary() {
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
      if (macro_depth_ > 0 && (t.text == "varargs" || t.text == "kwargs")) {
        unsupported(line, "macro variable '" + t.text + "'");
      }
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

ExprPtr ExpressionParser::parse_postfix(ExprPtr node) {
  Nesting nesting(*this);
  while (true) {
    nesting.deepen(cur().line);
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ExpressionParser::parse_filter_expr(ExprPtr node) {
  Nesting nesting(*this);
  while (true) {
    nesting.deepen(cur().line);
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

ExprPtr ExpressionParser::parse_subscript(ExprPtr node) {
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

void ExpressionParser::parse_call_args(Expr& e) {
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

ExprPtr ExpressionParser::parse_call(ExprPtr callee) {
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

ExprPtr ExpressionParser::parse_filter(ExprPtr node) {
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

ExprPtr ExpressionParser::parse_test(ExprPtr node) {
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

}  // namespace augur::chat
