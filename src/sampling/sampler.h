// The sampler: turns one row of logits (plus the recent token history) into the exact
// probability distribution a token is drawn from, and draws it. The distribution is exposed
// because speculative acceptance needs p and q from the SAME transforms (ARCHITECTURE.md).
// Owns its scratch buffers; does not own the RNG (the session passes it in) nor any history
// (the caller passes the tokens so far; nothing is remembered between calls).
//
// Pipeline, in llama.cpp's default chain order (common/sampling: penalties → top-k → top-p →
// min-p → temperature → dist):
//   1. penalties over the last repeat_last_n tokens of `history`, each distinct token once, as
//      llama.cpp's penalties sampler: the repetition penalty, logit > 0 ? logit / penalty :
//      logit * penalty (so a penalty > 1 always makes a seen token less likely, whatever the
//      sign of its logit), then logit -= count * frequency_penalty + presence_penalty, count
//      being the token's occurrences in the window;
//   2. top-k: keep the k highest penalised logits;
//   3. top-p: softmax over what is left; keep the smallest prefix of the descending list whose
//      cumulative probability is >= top_p (at least one token, llama.cpp's min_keep = 1);
//   4. min-p: keep tokens whose probability is >= min_p * the largest probability, i.e. whose
//      logit is >= max_logit + log(min_p) (the same test as llama.cpp, done on logits);
//   5. temperature: divide the surviving logits by it;
//   6. softmax over the survivors; every other token gets probability exactly 0.
//
// Why the order matters: top-k/top-p/min-p run BEFORE temperature, on the untempered
// distribution, as llama.cpp's chain does. Temperature then only reshapes the survivors, so it
// never changes which tokens can be drawn. Tempering first would: with probs {.1,.2,.3,.4},
// top_p = 0.5 keeps {.3,.4} here, but at temperature 0.5 first the top token alone already
// holds 0.53 and top-p would keep only it.
//
// Ties: candidates are ordered by (penalised logit descending, token index ascending), a strict
// total order, so a tie at the top-k or top-p boundary keeps the LOWER token ids. llama.cpp's
// std::partial_sort leaves that unspecified; we make it deterministic on purpose. Greedy
// (temperature <= 0) is argmax of the penalised logits, lowest index on a tie; truncation never
// changes it since the top token always survives.
//
// Cost: O(n_vocab) per call plus sorting only what is needed: top-k sorts a k-prefix
// (partial_sort / nth_element); top-p without top-k sorts a growing prefix (256, then x4) until
// the mass is reached; min-p alone sorts nothing. No allocation after construction.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/rng.h"

namespace augur::sampling {

struct SamplerConfig {
  float temperature = 0.8f;     // <= 0 means greedy; validate() rejects < 0
  int top_k = 40;               // >= 0; 0 (or >= n_vocab) disables
  float top_p = 0.95f;          // in (0, 1]; >= 1 disables
  float min_p = 0.05f;          // in [0, 1]; <= 0 disables
  float repeat_penalty = 1.0f;  // > 0; 1 disables
  int repeat_last_n = 64;       // tokens of history the penalties look at; 0 disables, -1 = all
  float frequency_penalty = 0;  // subtracted once per occurrence in the window; 0 disables
  float presence_penalty = 0;   // subtracted once if the token occurs in the window; 0 disables
  uint64_t seed = 0xA06u;       // for the session's SeededRng; the Sampler itself draws nothing

  // Throws InvalidArgument naming the option, its value and the allowed range.
  void validate() const;
};

// Index of the largest value; the lowest index wins a tie. `values` must be non-empty.
int32_t argmax(std::span<const float> values);

// One token from `probs` (non-negative, positive sum, not necessarily normalised): index i with
// probability probs[i] / sum(probs), through rng.categorical(), so a test Rng sees the row every
// token is drawn from. With a uniform-driven Rng this is the inverse CDF described in rng.h: one
// uniform, never a zero-probability index.
int32_t draw(std::span<const float> probs, Rng& rng);

class Sampler {
 public:
  // Validates `config` (InvalidArgument) and sizes the scratch for `n_vocab` tokens.
  Sampler(SamplerConfig config, int n_vocab);

  const SamplerConfig& config() const { return config_; }
  int n_vocab() const { return n_vocab_; }
  bool greedy() const { return config_.temperature <= 0.0f; }

  // The exact distribution sample() draws from, over the full vocabulary: zeros outside the
  // kept set, sums to 1 (up to float rounding). Greedy: one-hot on the argmax of the penalised
  // logits. Throws Error on a NaN or +inf logit, or when every logit is -inf; InvalidArgument
  // on a token of the penalty window outside [0, n_vocab). Whether prompt tokens belong in
  // `history` is the caller's choice.
  void distribution(std::span<const float> logits,     // [n_vocab]
                    std::span<const int32_t> history,  // tokens so far, oldest first
                    std::span<float> probs) const;     // [n_vocab], written

  // distribution() then draw(); writes the distribution into probs_out when it is non-empty
  // (it must then hold n_vocab floats). Greedy returns the argmax and consumes no uniform.
  int32_t sample(std::span<const float> logits,  // [n_vocab]
                 std::span<const int32_t> history, Rng& rng,
                 std::span<float> probs_out = {}) const;  // [n_vocab] or empty

 private:
  // Fills penalised_ from logits and the penalty window of history; throws on bad input.
  void penalise(std::span<const float> logits, std::span<const int32_t> history) const;

  SamplerConfig config_;
  int n_vocab_;
  // Scratch, reused by every call (a Sampler belongs to one thread).
  mutable std::vector<float> penalised_;  // [n_vocab] logits after the repetition penalty
  mutable std::vector<int32_t> order_;    // [n_vocab] candidate token ids, kept set in front
  mutable std::vector<int32_t> seen_;     // [n_vocab] occurrences in the window while penalising
  mutable std::vector<float> probs_;      // [n_vocab] distribution when the caller wants none
};

}  // namespace augur::sampling
