// The autoregressive generation loop: prefill the prompt in ubatches, then sample and decode
// one token at a time until n tokens, an end-of-generation token, the context limit, or the
// caller says stop. Times prefill and decode separately (decode-only speed is the headline).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cache/kv_cache.h"
#include "model/evaluator.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace augur::engine {

struct GenerateOptions {
  int n_predict = 128;      // tokens to generate; < 0 means until EOG or the context is full
  bool ignore_eos = false;  // keep going through end-of-generation tokens
};

enum class StopReason { Length, EndOfGeneration, ContextFull, Cancelled };
std::string_view stop_reason_name(StopReason reason);

struct GenerateStats {
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  double prefill_s = 0;  // prompt forward, up to the first logits
  double decode_s = 0;   // sampling + forwards of generated tokens after the first
  double prefill_tok_s() const { return prefill_s > 0 ? n_prompt / prefill_s : 0; }
  // Tokens produced by decode forwards (the first comes from the prefill's logits).
  double decode_tok_s() const { return decode_s > 0 && n_gen > 1 ? (n_gen - 1) / decode_s : 0; }
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated tokens (an end-of-generation token is not included)
  StopReason stop = StopReason::Length;
  GenerateStats stats;
};

// Called with each generated token as soon as it is known; returning false stops generation.
using TokenCallback = std::function<bool(int32_t token)>;
// Decides which tokens end generation (the tokenizer's EOG set).
using EogPredicate = std::function<bool(int32_t token)>;

class Generator {
 public:
  Generator(const model::Model& model, kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch);

  // Starts from an empty cache each call. InvalidArgument for an empty prompt or one that does
  // not fit the context (with n_predict, when n_predict >= 0).
  GenerateResult generate(std::span<const int32_t> prompt, const sampling::Sampler& sampler,
                          sampling::Rng& rng, const GenerateOptions& options,
                          const EogPredicate& is_eog, const TokenCallback& on_token = {});

  int64_t n_ctx() const { return cache_.capacity(); }

 private:
  const model::Model& model_;
  cache::KvCache cache_;
  model::Evaluator eval_;
  std::vector<float> logits_;  // [n_vocab]
  std::vector<float> probs_;   // [n_vocab]
};

}  // namespace augur::engine
