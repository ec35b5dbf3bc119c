// libFuzzer target: the chat-template parser and renderer on arbitrary template sources and
// contexts. Input: a template source, then (after the provider's length split) a JSON context;
// an invalid or non-object context is replaced by a two-message conversation. Parsing and
// rendering must end with a string or an augur::Error (Unsupported, FormatError, InvalidArgument,
// TemplateRaised), within the time and memory limits scripts/fuzz.sh gives every input.
#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_template.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::ordered_json;
  FuzzedDataProvider in(data, size);
  const std::string source = in.ConsumeRandomLengthString(1 << 16);
  ordered_json context = ordered_json::parse(in.ConsumeRemainingBytesAsString(), nullptr,
                                             /*allow_exceptions=*/false);
  if (!context.is_object()) {
    context = {{"messages",
                {{{"role", "system"}, {"content", "Be brief."}},
                 {{"role", "user"}, {"content", "def f(x):"}}}},
               {"add_generation_prompt", true},
               {"bos_token", "<s>"},
               {"eos_token", "</s>"}};
  }
  try {
    const auto tmpl = augur::chat::ChatTemplate::parse(source);
    // A fixed clock keeps every run of one input identical (strftime_now reads it).
    (void)tmpl.render(context, std::chrono::system_clock::time_point(std::chrono::hours(500000)));
  } catch (const augur::Error&) {
    // Outside the supported subset, a syntax error, or refused by the template: all named.
  }
  return 0;
}
