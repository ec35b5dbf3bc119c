// Builds the syntax tree of a chat template from its tokens, accepting Jinja2's grammar for the
// subset we render (docs/chat-templates.md). Anything outside the subset fails here, at parse
// time, when it can be seen from the source: an unknown filter, test or tag is Unsupported
// naming it and its line; malformed syntax is a FormatError with the line.
#pragma once

#include <vector>

#include "chat/template_ast.h"
#include "chat/template_lexer.h"

namespace augur::chat {

[[nodiscard]] Body parse_template(const std::vector<Token>& tokens);

}  // namespace augur::chat
