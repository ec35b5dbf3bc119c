// The JSON objects of the OpenAI API as augur answers them: errors, completion responses,
// streaming chunks, usage, log-probabilities, and the `augur` extension with the speculative
// stats of a request. Pure functions of their inputs (ids and clocks are passed in).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "server/completion.h"
#include "server/request.h"

namespace augur::server {

struct ResponseIds {
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;    // the served model's id
};

// {"error": {"message", "type", "code"}}; type from the status (invalid_request_error, ...).
nlohmann::json error_json(int status, const std::string& message);

// The `augur` extension: drafter, cycles, drafted, accepted, tau, decode and prefill tok/s,
// prompt tokens reused from the slot's cache.
nlohmann::json augur_stats_json(const CompletionResult& result);
nlohmann::json usage_json(const CompletionResult& result);

// The whole non-streaming response (chat.completion or text_completion).
nlohmann::json completion_json(const CompletionRequest& request, const CompletionResult& result,
                               const ResponseIds& ids);

// One streaming chunk carrying `delta` (chat: {"content": ...}; completions: {"text": ...}).
// A chat stream's first chunk has role "assistant" and empty content (role_only).
nlohmann::json delta_chunk_json(const CompletionRequest& request, const Delta& delta,
                                const ResponseIds& ids, bool role_only = false);
// The last choice chunk: empty delta, the finish reason, and the augur stats.
nlohmann::json final_chunk_json(const CompletionRequest& request, const CompletionResult& result,
                                const ResponseIds& ids);
// stream_options.include_usage: the chunk after the last with no choices and the usage.
nlohmann::json usage_chunk_json(const CompletionRequest& request, const CompletionResult& result,
                                const ResponseIds& ids);

// One server-sent event: "data: <json>\n\n" (invalid UTF-8 in token bytes replaced by U+FFFD).
std::string sse_event(const nlohmann::json& payload);
// The JSON text of a response body, with the same replacement.
std::string dump(const nlohmann::json& payload);

}  // namespace augur::server
