// Strict parsing of an OpenAI server-sent event stream for server tests: every event is exactly
// "data: <payload>\n\n", the payloads before the last are JSON objects, the last is "[DONE]".
// Anything else makes the stream malformed (with the reason).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace augur::testing {

struct SseStream {
  bool well_formed = false;
  std::string problem;                 // why it is not
  std::vector<nlohmann::json> events;  // the JSON payloads, in order
  std::string text;                    // the concatenated deltas (chat content or completion text)
  nlohmann::json final_chunk;          // the one with a finish_reason
  nlohmann::json usage;                // from a usage chunk, if any
  bool error_event = false;            // an {"error": ...} event (stream ended by the server)
};

inline SseStream parse_sse(const std::string& body) {
  SseStream s;
  size_t at = 0;
  bool done = false;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) {
      s.problem = "an event without its closing blank line";
      return s;
    }
    const std::string event = body.substr(at, end - at);
    at = end + 2;
    if (done) {
      s.problem = "an event after [DONE]";
      return s;
    }
    if (event.rfind("data: ", 0) != 0 || event.find('\n') != std::string::npos) {
      s.problem = "an event that is not one 'data: ' line: " + event.substr(0, 80);
      return s;
    }
    const std::string payload = event.substr(6);
    if (payload == "[DONE]") {
      done = true;
      continue;
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(payload);
    } catch (const std::exception& e) {
      s.problem = std::string("a payload that is not JSON: ") + e.what();
      return s;
    }
    if (j.contains("error")) {
      s.error_event = true;
      s.events.push_back(j);
      continue;
    }
    for (const auto& choice : j.value("choices", nlohmann::json::array())) {
      if (choice.contains("delta") && choice["delta"].contains("content")) {
        s.text += choice["delta"]["content"].get<std::string>();
      }
      if (choice.contains("text")) s.text += choice["text"].get<std::string>();
      if (!choice["finish_reason"].is_null()) s.final_chunk = j;
    }
    if (j.contains("usage") && !j["usage"].is_null()) s.usage = j["usage"];
    s.events.push_back(std::move(j));
  }
  if (!done && !s.error_event) {
    s.problem = "no data: [DONE] at the end";
    return s;
  }
  if (!s.error_event && s.final_chunk.is_null()) {
    s.problem = "no chunk with a finish_reason";
    return s;
  }
  s.well_formed = true;
  return s;
}

}  // namespace augur::testing
