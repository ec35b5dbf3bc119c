// Speculative acceptance: given draft tokens d1..dk, the drafter's rows q1..qk (or none: a
// deterministic drafter, q_i = one-hot on d_i) and the target's rows p0..pk, decides how many
// drafts the target keeps and which token follows them. The committed tokens of a cycle are
// d1..d_n_accepted, then next_token.
//
// Owns: the two acceptance lanes and one scratch row. Does not own: the rows, the draft, the
// RNG; and no model, cache or sampler transform lives here. The caller computes every row with
// Sampler::distribution over the history that position would have in an AR run (context plus
// the draft prefix, so history-dependent penalties follow the draft), with the SAME sampler
// config for p and q; then the output law is exactly AR sampling with that config.
//
// Rows need not be normalised: like sampling::draw, a row stands for row / sum(row), and the
// sampled lane divides by the double sum itself. So the law is exact with respect to the rows as
// draw() would sample them, not merely up to the float rounding of their sums. For the same
// reason the residual and the row handed to the final draw are kept in double.
//
// Sampled lane (Leviathan et al. 2023, Chen et al. 2023), with p = p_{i-1}, q = q_i, d = d_i:
//   - accept d with probability min(1, p(d) / q(d)): one Rng::bernoulli per draft position tested;
//   - on the first rejection, draw from normalise(max(0, p - q)) (one Rng::categorical) and stop;
//   - after k accepts, draw the bonus from p_k (one Rng::categorical).
// Every random choice goes through the Rng with its exact law, so the exact-law tests enumerate
// this code (and the generation loop around it) by injecting an Rng that takes every outcome.
// Edge cases, and why each keeps the law exact:
//   - p(d) = 0: never accepted (probability 0), whatever q(d) is, so no committed token ever
//     leaves the target's support.
//   - q(d) = 0 < p(d): probability 1 (ratio +inf). If d was drawn from q this branch has
//     probability 0, so no choice could move the law; taking the limit of min(1, p/q) as q -> 0
//     means a q(d) that underflowed from a tiny positive value acts like its true value.
//   - residual all zero: in exact arithmetic sum(max(0, p - q)) = sum(max(0, q - p)) = TV(p, q),
//     so zero means p = q, every ratio is 1 and the rejection branch has probability 0: any
//     fallback leaves the law unchanged. We draw from p, the target's own row, so that where
//     rounding does make the branch reachable (mass at rounding level) the token still follows
//     the target. For identical rows it is unreachable: the normalised rows are bitwise equal,
//     the ratio is exactly 1 and bernoulli(1) always accepts.
// Block rule (SampledRule::kBlock; Sun et al., "Block verification accelerates speculative
// decoding", ICLR 2025): the same law, never fewer accepted drafts in expectation, more when q
// is spread. With weights w_0 = 1, w_i = min(1, w_{i-1} p_{i-1}(d_i) / q_i(d_i)):
//   - stop after d_i (i < k) with probability h_i = m_i / (m_i + 1 - w_i), where
//     m_i = sum_x max(0, w_i p_i(x) - q_{i+1}(x)) (0 when m_i + 1 - w_i = 0); after d_k with w_k;
//   - the kept prefix is d_1..d_tau for the largest tau whose test succeeds (tested from k down,
//     one Rng::bernoulli each, stopping at the first success; none: tau = 0);
//   - the next token comes from normalise(max(0, w_tau p_tau - q_{tau+1})) for tau < k, and from
//     p_k after d_k. For k = 1 this is the token rule exactly. Edge cases as in the token rule:
//     p(d) = 0 gives w = 0 from there on (nothing past it is kept), q(d) = 0 < p(d) gives w = 1,
//     and an all-zero residual (unreachable in exact arithmetic) draws from p.
//   tests/spec/acceptance_exact_law_test.cpp proves both rules by enumeration.
// Greedy lane: accept while d_i == argmax p_{i-1} (lowest index on a tie, as the greedy Sampler);
// next = argmax of the first mismatching row, or of p_k after k accepts. Rows may be one-hot
// (Sampler::distribution at temperature 0) or raw logits with any penalty already applied;
// probability rows from a tempered sampler work too, but exp() can round two close logits to a
// tie the logits do not have, so greedy equality with AR is only promised for those two kinds.
//
// Cost: sampled, O(n_vocab) per tested draft (the double sums of p_{i-1} and q_i) plus O(n_vocab)
// for the final draw; greedy, one argmax per tested row. No allocation after construction.
//
// The two lanes are virtual for one reason: the engine tests hand the Generator a test-side
// subclass with a planted defect (tests/support/planted_acceptors.h), so each checker is shown to
// catch it while production holds no defect branches. One virtual call per cycle costs nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/rng.h"

namespace augur::spec {

// How the sampled lane decides: token by token (Leviathan-Chen), or over the whole block.
enum class SampledRule { kToken, kBlock };

struct AcceptanceResult {
  int n_accepted = 0;       // drafts d1..d_n kept, 0 <= n <= k
  int32_t next_token = -1;  // the correction after a rejection, or the bonus after k accepts
};

class Acceptor {
 public:
  // Sizes the scratch row for `n_vocab` tokens (InvalidArgument if n_vocab <= 0). No allocation
  // after this.
  explicit Acceptor(int n_vocab, SampledRule rule = SampledRule::kBlock);
  virtual ~Acceptor() = default;

  int n_vocab() const { return n_vocab_; }
  SampledRule rule() const { return rule_; }
  void set_rule(SampledRule rule) { rule_ = rule; }

  // Greedy lane. draft: [k]; p: [k + 1, n_vocab] (one-hot or logit rows, see above).
  [[nodiscard]] virtual AcceptanceResult greedy(
      std::span<const int32_t> draft,   // [k]
      std::span<const float> p) const;  // [k + 1, n_vocab]

  // Sampled lane, by rule(). q is [k, n_vocab] (q_i is the row d_i was drawn from) or empty for a
  // deterministic drafter (q_i = one-hot on d_i). Rows are >= 0 with positive sums; p rows are
  // only read as far as the cycle gets. k = 0 is plain AR sampling from p_0.
  [[nodiscard]] virtual AcceptanceResult sampled(std::span<const int32_t> draft,  // [k]
                                                 std::span<const float> q,  // [k, n_vocab] or empty
                                                 std::span<const float> p,  // [k + 1, n_vocab]
                                                 sampling::Rng& rng);

 private:
  void check_shapes(std::span<const int32_t> draft, std::span<const float> q,
                    std::span<const float> p) const;
  AcceptanceResult sampled_by_token(std::span<const int32_t> draft, std::span<const float> q,
                                    std::span<const float> p, sampling::Rng& rng);
  AcceptanceResult sampled_by_block(std::span<const int32_t> draft, std::span<const float> q,
                                    std::span<const float> p, sampling::Rng& rng);
  // Draws from normalise(max(0, weight * p_row - q_row)), q_row one-hot on `token` when empty;
  // from p_row where that is all zero.
  int32_t draw_residual(std::span<const float> p_row, double p_scale, double weight,
                        std::span<const float> q_row, double q_scale, int32_t token,
                        sampling::Rng& rng);

  int n_vocab_;
  SampledRule rule_;
  std::vector<double> weights_;  // [n_vocab] residual or bonus row handed to Rng::categorical
};

}  // namespace augur::spec
