#include "server/completion.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "sampling/rng.h"

namespace augur::server {

TokenLogprob token_logprob(const tokenizer::Tokenizer& tok, std::span<const float> logits,
                           int32_t token, int n_top) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  const double log_z = static_cast<double>(max_logit) + std::log(sum);
  const auto logprob = [&](int32_t id) {
    return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(id)]) - log_z);
  };
  TokenLogprob out;
  out.token = tok.token_to_piece(token, /*special=*/true);
  out.logprob = logprob(token);
  if (n_top > 0) {
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    const auto n = std::min<size_t>(static_cast<size_t>(n_top), order.size());
    // Highest logit first; the lower id on a tie, as the sampler orders candidates.
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                      [&](int32_t a, int32_t b) {
                        const float la = logits[static_cast<size_t>(a)];
                        const float lb = logits[static_cast<size_t>(b)];
                        return la > lb || (la == lb && a < b);
                      });
    for (size_t i = 0; i < n; ++i) {
      out.top.push_back({tok.token_to_piece(order[i], /*special=*/true), logprob(order[i])});
    }
  }
  return out;
}

CompletionResult run_completion(Slot& slot, const tokenizer::Tokenizer& tok,
                                const CompletionJob& job) {
  const CompletionRequest& request = *job.request;
  engine::Generator& generator = *slot.generator;
  CompletionResult result;
  result.prompt_tokens = static_cast<int64_t>(job.prompt.size());

  sampling::SamplerConfig config = request.sampler;
  config.seed = request.seed ? *request.seed : std::random_device{}();
  const sampling::Sampler sampler(config, tok.n_vocab());
  sampling::SeededRng rng(config.seed);

  engine::GenerateOptions options;
  // The last generated token is never fed back: n tokens need n_prompt + n - 1 rows.
  const int64_t room = generator.n_ctx() - result.prompt_tokens + 1;
  options.n_predict =
      request.max_tokens < 0 ? -1 : static_cast<int>(std::min<int64_t>(request.max_tokens, room));
  options.ignore_eos = request.ignore_eos;
  options.drafter = slot.drafter.get();
  options.draft_max = job.draft_max;
  options.sampled_rule = job.sampled_rule;

  TextStream text(tok, request.stop);
  Delta pending;
  bool client_gone = false;
  if (request.logprobs) {
    options.on_token_logits = [&](int32_t token, std::span<const float> logits) {
      TokenLogprob entry = token_logprob(tok, logits, token, request.top_logprobs);
      entry.text_offset = text.decoded_size();
      pending.logprobs.push_back(std::move(entry));
    };
  }
  // Sends the text with the log-probabilities of the tokens since the last send. A token whose
  // text is still held back keeps its entry for the next send; `last` sends even without text.
  // After a stop string, only tokens that start before it belong to the answer.
  const auto flush = [&](std::string piece, bool last) {
    if (text.stopped()) {
      std::erase_if(pending.logprobs,
                    [&](const TokenLogprob& e) { return e.text_offset >= text.sent().size(); });
    }
    if (piece.empty() && (!last || pending.logprobs.empty())) return;
    result.logprobs.insert(result.logprobs.end(), pending.logprobs.begin(), pending.logprobs.end());
    pending.text = std::move(piece);
    if (job.on_delta && !job.on_delta(std::move(pending))) client_gone = true;
    pending = Delta{};
  };
  const auto on_token = [&](int32_t token) {
    std::string piece = text.push(token);
    flush(std::move(piece), text.stopped());
    if (job.stop_all && job.stop_all->load()) client_gone = true;
    return !client_gone && !text.stopped();
  };
  const engine::GenerateResult generated = generator.generate(
      job.prompt, sampler, rng, options, [&](int32_t t) { return tok.is_eog(t); }, on_token);
  if (!text.stopped() && !client_gone) flush(text.finish(), /*last=*/true);

  result.text = text.sent();
  result.cancelled = client_gone;
  result.completion_tokens = static_cast<int64_t>(generated.tokens.size());
  result.stats = generated.stats;
  // What the forward passes really skipped (the slot's rows, or rows restored into it).
  result.reused_tokens = generated.stats.n_prompt - generated.stats.n_prompt_evaluated;
  const bool ended = text.stopped() || generated.stop == engine::StopReason::EndOfGeneration;
  result.finish_reason = ended ? "stop" : "length";
  return result;
}

}  // namespace augur::server
