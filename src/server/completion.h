// One request's generation on a leased slot: the prompt through the slot's Generator (with its
// drafter, so every request is speculatively decoded), the tokens through a TextStream (whole
// characters, stop strings), log-probabilities from the target's logits, and the deltas handed
// to the caller as they become safe to send. Knows nothing of HTTP.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "server/request.h"
#include "server/slot_pool.h"
#include "server/text_stream.h"
#include "tokenizer/tokenizer.h"

namespace augur::server {

// One generated token's log-probability under the target model (log-softmax of its raw logits,
// before any sampling transform: what AR decoding of the same position sees), with the most
// likely alternatives.
struct TokenLogprob {
  struct Alternative {
    std::string token;  // the token's bytes
    float logprob = 0;
  };
  std::string token;
  float logprob = 0;
  std::vector<Alternative> top;  // most likely first, request.top_logprobs of them
  size_t text_offset = 0;        // where the token's text starts in the completion text
};

// Text that became safe to send, with the log-probabilities of the tokens that produced it.
struct Delta {
  std::string text;
  std::vector<TokenLogprob> logprobs;
};

struct CompletionResult {
  std::string text;
  std::string finish_reason;  // "stop" (end of generation or a stop string) or "length"
  bool cancelled = false;     // the client went away or the server is shutting down
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t reused_tokens = 0;  // prompt tokens the slot's cache already held
  // Every token's that contributed to the text, when requested (a token wholly inside a stop
  // string is not part of the answer).
  std::vector<TokenLogprob> logprobs;
  engine::GenerateStats stats;
};

struct CompletionJob {
  std::span<const int32_t> prompt;
  const CompletionRequest* request = nullptr;
  int draft_max = 8;
  // Called with each non-empty delta; returns false when the client is gone.
  std::function<bool(Delta&&)> on_delta;
  const std::atomic<bool>* stop_all = nullptr;  // set at shutdown: end now
  spec::SampledRule sampled_rule = spec::SampledRule::kBlock;
};

// Runs the job on `slot`. The prompt must fit the slot's context (checked by the caller);
// max_tokens is clamped to what the context leaves, ending with "length" there.
[[nodiscard]] CompletionResult run_completion(Slot& slot, const tokenizer::Tokenizer& tok,
                                              const CompletionJob& job);

// The log-probability of `token` and the top `n_top` alternatives from one row of logits.
TokenLogprob token_logprob(const tokenizer::Tokenizer& tok, std::span<const float> logits,
                           int32_t token, int n_top);

}  // namespace augur::server
