// The syntax tree of a chat template: expressions and statements as the parser builds them and
// the evaluator walks them. Plain data; every node keeps the line it came from for errors.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/template_value.h"

namespace augur::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Literal,       // literal
  Name,          // name
  Attribute,     // object.name: children[0], name
  Subscript,     // children[0][children[1]]
  Slice,         // children[0][start:stop:step]: children[1..3], null when omitted
  Call,          // children[0](args, kwargs)
  MethodCall,    // children[0].name(args, kwargs)
  Filter,        // children[0] | name(args, kwargs)
  Test,          // children[0] is [not] name(args): negated
  Unary,         // op in {"not", "-", "+"}: children[0]
  Binary,        // children[0] op children[1]; op includes "and", "or", "in", "not in"
  Conditional,   // children[1] if children[0] else children[2] (children[2] may be null)
  ListLiteral,   // [children...]
  TupleLiteral,  // (children...), evaluates to a list
  DictLiteral,   // {keys[i]: children[i]}
};

struct Expr {
  ExprKind kind = ExprKind::Literal;
  int line = 1;
  std::string name;  // Name, Attribute, MethodCall, Filter, Test; op for Unary/Binary
  Value literal;
  bool negated = false;
  std::vector<ExprPtr> children;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

enum class NodeKind {
  Text,      // text
  Output,    // {{ expr }}
  If,        // if expr: body, else else_body (an elif is an If alone in else_body)
  For,       // for targets in expr [if condition]: body [else else_body]
  Set,       // set targets = expr, or set targets (a namespace attribute when attribute set)
  SetBlock,  // set targets[0] %}body{% endset
  Macro,     // macro name(params with defaults): body
  Break,
  Continue,
  Scope,  // a block that only renders its body ({% generation %}, {% with %} uses Set first)
};

struct Node {
  NodeKind kind = NodeKind::Text;
  int line = 1;
  std::string text;                  // Text; macro name
  std::vector<std::string> targets;  // For / Set targets; macro parameter names
  std::string attribute;             // Set of ns.attribute: targets[0] is ns
  ExprPtr expr;                      // condition, iterable, value
  ExprPtr condition;                 // For's inline `if`
  std::vector<ExprPtr> defaults;     // macro parameter defaults (null when none)
  Body body;
  Body else_body;
};

}  // namespace augur::chat
