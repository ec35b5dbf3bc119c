#include "chat/chat_template.h"

#include "chat/template_eval.h"
#include "chat/template_lexer.h"
#include "chat/template_parser.h"

namespace augur::chat {

struct ParsedBody {
  Body body;
};

ChatTemplate ChatTemplate::parse(std::string_view source) {
  auto parsed = std::make_shared<ParsedBody>();
  parsed->body = parse_template(tokenize_template(source));
  return ChatTemplate(std::move(parsed));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context,
                                 std::chrono::system_clock::time_point now) const {
  if (!context.is_object()) {
    throw InvalidArgument(std::string("chat template context must be a JSON object, got ") +
                          context.type_name());
  }
  Dict variables;
  try {
    for (const auto& [key, value] : context.items()) {
      variables.entries.emplace_back(key, Value::from_json(value));
    }
  } catch (const ValueFault& fault) {
    throw InvalidArgument(std::string("chat template context: ") + fault.what());
  }
  return render_body(body_->body, variables, now);
}

std::string_view chatml_template() {
  // The ChatML template llama.cpp and transformers fall back to.
  return "{% for message in messages %}"
         "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' "
         "}}"
         "{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
}

}  // namespace augur::chat
