// Renders a parsed chat template: scopes (a for-loop iteration and a macro call each get their
// own, as in Jinja2; if-blocks do not), statements, operators with Python semantics and the
// globals raise_exception, strftime_now, namespace, range and dict. Errors carry the line of
// the node that failed.
#pragma once

#include <chrono>
#include <string>

#include "chat/template_ast.h"

namespace augur::chat {

// `variables` are the template's context (messages, add_generation_prompt, ...); they shadow
// the globals. `now` is the clock strftime_now() reads, shown in local time.
std::string render_body(const Body& body, const Dict& variables,
                        std::chrono::system_clock::time_point now);

}  // namespace augur::chat
