#include "server/openai_json.h"

namespace augur::server {
namespace {

using Json = nlohmann::json;

Json bytes_json(const std::string& s) {
  Json out = Json::array();
  for (const unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
Json chat_logprobs_json(const std::vector<TokenLogprob>& entries) {
  Json content = Json::array();
  for (const auto& e : entries) {
    Json top = Json::array();
    for (const auto& alt : e.top) {
      top.push_back(
          {{"token", alt.token}, {"logprob", alt.logprob}, {"bytes", bytes_json(alt.token)}});
    }
    content.push_back({{"token", e.token},
                       {"logprob", e.logprob},
                       {"bytes", bytes_json(e.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

// Completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}.
Json completion_logprobs_json(const std::vector<TokenLogprob>& entries) {
  Json tokens = Json::array(), logprobs = Json::array(), tops = Json::array(),
       offsets = Json::array();
  for (const auto& e : entries) {
    tokens.push_back(e.token);
    logprobs.push_back(e.logprob);
    Json top = Json::object();
    for (const auto& alt : e.top) top[alt.token] = alt.logprob;
    tops.push_back(std::move(top));
    offsets.push_back(e.text_offset);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

Json logprobs_json(const CompletionRequest& request, const std::vector<TokenLogprob>& entries) {
  if (!request.logprobs) return nullptr;
  return request.endpoint == Endpoint::Chat ? chat_logprobs_json(entries)
                                            : completion_logprobs_json(entries);
}

const char* object_name(const CompletionRequest& request, bool chunk) {
  if (request.endpoint == Endpoint::Completion) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

Json envelope(const CompletionRequest& request, const ResponseIds& ids, bool chunk) {
  return {{"id", ids.id},
          {"object", object_name(request, chunk)},
          {"created", ids.created},
          {"model", ids.model},
          {"system_fingerprint", "augur"}};
}

}  // namespace

Json error_json(int status, const std::string& message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 404 ? "not_found_error"
                     : status == 503 ? "unavailable_error"
                     : status < 500  ? "invalid_request_error"
                                     : "server_error";
  return {{"error", {{"message", message}, {"type", type}, {"code", status}}}};
}

Json augur_stats_json(const CompletionResult& result) {
  const auto& s = result.stats;
  Json out = {{"drafter", s.spec.drafter.empty() ? "none" : s.spec.drafter},
              {"cycles", s.spec.cycles},
              {"drafted", s.spec.drafted},
              {"accepted", s.spec.accepted},
              {"tau", s.spec.tau()},
              {"prompt_tokens_reused", result.reused_tokens},
              {"prefill_s", s.prefill_s},
              {"decode_s", s.decode_s},
              {"prefill_tok_s", s.prefill_tok_s()},
              {"decode_tok_s", s.decode_tok_s()}};
  return out;
}

Json usage_json(const CompletionResult& result) {
  return {{"prompt_tokens", result.prompt_tokens},
          {"completion_tokens", result.completion_tokens},
          {"total_tokens", result.prompt_tokens + result.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", result.reused_tokens}}}};
}

Json completion_json(const CompletionRequest& request, const CompletionResult& result,
                     const ResponseIds& ids) {
  Json choice = {{"index", 0},
                 {"logprobs", logprobs_json(request, result.logprobs)},
                 {"finish_reason", result.finish_reason}};
  if (request.endpoint == Endpoint::Chat) {
    choice["message"] = {{"role", "assistant"}, {"content", result.text}};
  } else {
    choice["text"] = result.text;
  }
  Json out = envelope(request, ids, false);
  out["choices"] = Json::array({std::move(choice)});
  out["usage"] = usage_json(result);
  out["augur"] = augur_stats_json(result);
  return out;
}

Json delta_chunk_json(const CompletionRequest& request, const Delta& delta, const ResponseIds& ids,
                      bool role_only) {
  Json choice = {{"index", 0},
                 {"logprobs", role_only ? Json(nullptr) : logprobs_json(request, delta.logprobs)},
                 {"finish_reason", nullptr}};
  if (request.endpoint == Endpoint::Chat) {
    choice["delta"] =
        role_only ? Json{{"role", "assistant"}, {"content", ""}} : Json{{"content", delta.text}};
  } else {
    choice["text"] = delta.text;
  }
  Json out = envelope(request, ids, true);
  out["choices"] = Json::array({std::move(choice)});
  return out;
}

Json final_chunk_json(const CompletionRequest& request, const CompletionResult& result,
                      const ResponseIds& ids) {
  Json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", result.finish_reason}};
  if (request.endpoint == Endpoint::Chat) {
    choice["delta"] = Json::object();
  } else {
    choice["text"] = "";
  }
  Json out = envelope(request, ids, true);
  out["choices"] = Json::array({std::move(choice)});
  out["augur"] = augur_stats_json(result);
  return out;
}

Json usage_chunk_json(const CompletionRequest& request, const CompletionResult& result,
                      const ResponseIds& ids) {
  Json out = envelope(request, ids, true);
  out["choices"] = Json::array();
  out["usage"] = usage_json(result);
  return out;
}

std::string dump(const Json& payload) {
  return payload.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string sse_event(const Json& payload) {
  return "data: " + dump(payload) + "\n\n";
}

}  // namespace augur::server
