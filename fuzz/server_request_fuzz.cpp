// libFuzzer target: an HTTP request body on its way to generation parameters. Input: a byte whose
// low bit picks /v1/chat/completions or /v1/completions, then the body. The body is parsed as JSON
// (a parse failure is the server's 400) and checked as that request; a chat request's messages are
// rendered through the ChatML fallback and a real model template, as the server does. Then every
// member of the body and of its first message is swapped in turn for a value of each other JSON
// type and checked again: type confusion is what byte mutations of JSON rarely reach. Every
// refusal must be an augur::Error (the server's 400 or 500 with a message naming the field); any
// other exception would reach the client as "internal error" and counts as a bug here.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "chat/chat_template.h"
#include "common/error.h"
#include "fuzz_paths.h"
#include "server/request.h"

namespace {

using namespace augur;

const chat::ChatTemplate& chatml() {
  static const auto t = chat::ChatTemplate::parse(chat::chatml_template());
  return t;
}

const chat::ChatTemplate& qwen3() {
  static const auto t = [] {
    std::ifstream file(fuzz::shared_dir() / "chat-templates" / "Qwen-Qwen3-0.6B.jinja");
    std::stringstream text;
    text << file.rdbuf();
    return chat::ChatTemplate::parse(text.str());
  }();
  return t;
}

const nlohmann::ordered_json& kind(size_t i) {
  static const nlohmann::ordered_json kinds[] = {nullptr,
                                                 true,
                                                 -1,
                                                 1.5,
                                                 "text",
                                                 nlohmann::ordered_json::array(),
                                                 nlohmann::ordered_json::object(),
                                                 {{"role", "user"}},
                                                 {1, 2},
                                                 1e300};
  return kinds[i % std::size(kinds)];
}
constexpr size_t kKinds = 10;

void check(const nlohmann::ordered_json& body, server::Endpoint endpoint) {
  try {
    const server::CompletionRequest request = server::parse_completion_request(body, endpoint);
    request.sampler.validate();  // as the Sampler the server builds next does
    if (request.endpoint == server::Endpoint::Chat) {
      const nlohmann::ordered_json variables = {{"messages", request.messages},
                                                {"add_generation_prompt", true},
                                                {"bos_token", "<s>"},
                                                {"eos_token", "</s>"}};
      const auto now = std::chrono::system_clock::time_point(std::chrono::hours(500000));
      (void)chatml().render(variables, now);
      (void)qwen3().render(variables, now);
    }
  } catch (const Error&) {
    // A 400 (InvalidArgument) or 500 (Unsupported) naming the field: the intended outcome.
  }
}

// `body` again with each member of the object at `object` (a JSON pointer) swapped for each kind.
void check_swapped(const nlohmann::ordered_json& body,
                   const nlohmann::ordered_json::json_pointer& object, server::Endpoint endpoint) {
  if (!body.contains(object) || !body.at(object).is_object()) return;
  const size_t n = body.at(object).size();
  for (size_t member = 0; member < n; ++member) {
    for (size_t k = 0; k < kKinds; ++k) {
      nlohmann::ordered_json copy = body;
      auto it = copy.at(object).begin();
      std::advance(it, member);
      it.value() = kind(k);
      check(copy, endpoint);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)chatml();
  (void)qwen3();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto endpoint = data[0] & 1 ? server::Endpoint::Completion : server::Endpoint::Chat;
  const auto body = nlohmann::ordered_json::parse(data + 1, data + size, nullptr,
                                                  /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  check(body, endpoint);
  using Pointer = nlohmann::ordered_json::json_pointer;
  check_swapped(body, Pointer(""), endpoint);
  check_swapped(body, Pointer("/messages/0"), endpoint);
  return 0;
}
