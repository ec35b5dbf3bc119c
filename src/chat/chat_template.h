// A model's chat template (tokenizer.chat_template): a Jinja2 subset rendered exactly as Hugging
// Face transformers renders it (sandboxed environment with trim_blocks, lstrip_blocks and loop
// controls; tojson as json.dumps; raise_exception and strftime_now). The supported subset and
// its failure modes are in docs/chat-templates.md. This file owns the public API only; the
// lexer, parser, values and evaluator are the template_* files next to it.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"

namespace augur::chat {

// Raised by the template itself via raise_exception(msg): what() is the template's text.
struct TemplateRaised : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

struct ParsedBody;

class ChatTemplate {
 public:
  // Parses; throws Unsupported naming the construct and its line ("line 12: unsupported filter
  // 'wordwrap'") for anything outside the subset, FormatError for a syntax error with its line.
  [[nodiscard]] static ChatTemplate parse(std::string_view source);

  // Renders with the variables of `context`, an ordered JSON object (messages,
  // add_generation_prompt, bos_token, eos_token, tools, ...); `now` is the clock strftime_now()
  // reads, in local time. Throws TemplateRaised when the template refuses the input,
  // InvalidArgument ("line N: ...") for a runtime error such as a wrong type, Unsupported for a
  // construct only seen at run time (an unknown string method).
  std::string render(const nlohmann::ordered_json& context,
                     std::chrono::system_clock::time_point now) const;

 private:
  explicit ChatTemplate(std::shared_ptr<const ParsedBody> body) : body_(std::move(body)) {}
  std::shared_ptr<const ParsedBody> body_;  // immutable once parsed; copies share it
};

// The documented fallback for models without tokenizer.chat_template: ChatML.
std::string_view chatml_template();

}  // namespace augur::chat
