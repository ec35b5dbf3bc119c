// The OpenAI request bodies of /v1/chat/completions and /v1/completions, parsed and checked
// into what a generation needs. Every field the API documents is read with its type checked;
// a wrong type, a value out of range or an option augur does not have is an InvalidArgument
// (HTTP 400) naming the field. What the server does with the request lives elsewhere.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sampling/sampler.h"

namespace augur::server {

enum class Endpoint { Chat, Completion };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::Chat;
  std::string model;                // as the client named it (echoed back; one model is served)
  nlohmann::ordered_json messages;  // chat: [{role, content: string}], content parts joined
  std::string prompt;               // completions: the prompt text
  std::vector<int32_t> prompt_ids;  // completions: a prompt given as token ids
  int max_tokens = -1;              // -1: until end of generation or a full context
  sampling::SamplerConfig sampler;  // llama.cpp's defaults where the request is silent
  std::optional<uint64_t> seed;     // absent: a random seed
  std::vector<std::string> stop;    // non-empty strings; output ends before the first match
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;
  int top_logprobs = 0;     // 0..kMaxTopLogprobs alternatives per token
  bool ignore_eos = false;  // llama-server's extension
};

inline constexpr int kMaxTopLogprobs = 20;
inline constexpr size_t kMaxStopStrings = 16;

// Parses a request body (already JSON) for `endpoint`. Throws InvalidArgument naming the field.
[[nodiscard]] CompletionRequest parse_completion_request(const nlohmann::ordered_json& body,
                                                         Endpoint endpoint);

// The messages array of a chat request (or of POST /apply-template), checked: a non-empty array
// of objects with a known role and string content (or content parts of type "text", joined).
[[nodiscard]] nlohmann::ordered_json parse_messages(const nlohmann::ordered_json& messages);

}  // namespace augur::server
