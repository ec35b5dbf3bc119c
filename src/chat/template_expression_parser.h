// Parses Jinja2 expressions with Jinja2's precedence (conditional, or, and, not, comparisons,
// + -, ~, * / // %, **, unary, then postfix: attributes, subscripts, slices, calls, filters and
// tests). Filter and test names are checked here, so an unknown one fails at parse time. The
// statement parser (template_parser.cpp) builds on it.
#pragma once

#include <string>
#include <vector>

#include "chat/template_ast.h"
#include "chat/template_token_cursor.h"

namespace augur::chat {

class ExpressionParser : protected TokenCursor {
 public:
  using TokenCursor::TokenCursor;

  // A comma-separated list is a tuple; `with_condexpr` allows `a if b else c` (a for loop's
  // iterable does not, so its `if` filters items).
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens = false);
  ExprPtr parse_expression(bool with_condexpr);

 private:
  ExprPtr make(ExprKind kind, int line);
  ExprPtr make_binary(std::string op, ExprPtr left, ExprPtr right, int line);
  bool at_expression_end() const;
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  std::string comparison_op() const;
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  void parse_call_args(Expr& e);
  ExprPtr parse_call(ExprPtr callee);
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
};

}  // namespace augur::chat
