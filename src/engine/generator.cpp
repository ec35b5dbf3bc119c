#include "engine/generator.h"

#include <fmt/format.h>

#include <chrono>

#include "common/error.h"

namespace augur::engine {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Length: return "length";
    case StopReason::EndOfGeneration: return "eog";
    case StopReason::ContextFull: return "context_full";
    case StopReason::Cancelled: return "cancelled";
  }
  return "unknown";
}

Generator::Generator(const model::Model& model, kernels::ThreadPool& pool, int64_t n_ctx,
                     int64_t ubatch)
    : model_(model),
      cache_(model.hparams(), n_ctx),
      eval_(model, pool, ubatch, n_ctx),
      logits_(static_cast<size_t>(model.hparams().n_vocab)),
      probs_(static_cast<size_t>(model.hparams().n_vocab)) {}

GenerateResult Generator::generate(std::span<const int32_t> prompt,
                                   const sampling::Sampler& sampler, sampling::Rng& rng,
                                   const GenerateOptions& options, const EogPredicate& is_eog,
                                   const TokenCallback& on_token) {
  const int64_t n_ctx = cache_.capacity();
  if (prompt.empty()) throw InvalidArgument("the prompt is empty: nothing to condition on");
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt > n_ctx) {
    throw InvalidArgument(fmt::format(
        "prompt of {} tokens does not fit the context of {} (raise -c)", n_prompt, n_ctx));
  }
  // The last generated token is never fed back, so n tokens need n_prompt + n - 1 rows.
  if (options.n_predict > 0 && n_prompt + options.n_predict - 1 > n_ctx) {
    throw InvalidArgument(fmt::format(
        "prompt ({} tokens) + {} generated tokens do not fit the context of {} (raise -c)",
        n_prompt, options.n_predict, n_ctx));
  }
  cache_.clear();
  GenerateResult result;
  result.stats.n_prompt = n_prompt;
  if (options.n_predict == 0) return result;

  std::vector<int32_t> history(prompt.begin(), prompt.end());
  auto start = std::chrono::steady_clock::now();
  eval_.forward_last(prompt, cache_.memory(), logits_.data());
  cache_.commit(n_prompt);
  result.stats.prefill_s = seconds_since(start);

  start = std::chrono::steady_clock::now();
  for (;;) {
    const int32_t token = sampler.sample(logits_, history, rng, probs_);
    if (!options.ignore_eos && is_eog && is_eog(token)) {
      result.stop = StopReason::EndOfGeneration;
      break;
    }
    result.tokens.push_back(token);
    history.push_back(token);
    if (on_token && !on_token(token)) {
      result.stop = StopReason::Cancelled;
      break;
    }
    if (options.n_predict >= 0 && static_cast<int64_t>(result.tokens.size()) >= options.n_predict) {
      result.stop = StopReason::Length;
      break;
    }
    if (cache_.size() >= n_ctx) {
      result.stop = StopReason::ContextFull;
      break;
    }
    const int32_t fed = token;
    eval_.forward_last(std::span<const int32_t>(&fed, 1), cache_.memory(), logits_.data());
    cache_.commit(1);
  }
  result.stats.n_gen = static_cast<int64_t>(result.tokens.size());
  result.stats.decode_s = seconds_since(start);
  return result;
}

}  // namespace augur::engine
