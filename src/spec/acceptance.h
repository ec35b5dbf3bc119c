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
//   - accept d with probability min(1, p(d) / q(d)): one uniform per draft position tested;
//   - on the first rejection, draw from normalise(max(0, p - q)) (one uniform) and stop;
//   - after k accepts, draw the bonus from p_k (one uniform).
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
//     the ratio is exactly 1 and u < 1 always accepts.
// Greedy lane: accept while d_i == argmax p_{i-1} (lowest index on a tie, as the greedy Sampler);
// next = argmax of the first mismatching row, or of p_k after k accepts. Rows may be one-hot
// (Sampler::distribution at temperature 0) or raw logits with any penalty already applied;
// probability rows from a tempered sampler work too, but exp() can round two close logits to a
// tie the logits do not have, so greedy equality with AR is only promised for those two kinds.
//
// Cost: sampled, O(n_vocab) per tested draft (the double sums of p_{i-1} and q_i) plus O(n_vocab)
// for the final draw; greedy, one argmax per tested row. No allocation after construction.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/rng.h"

namespace augur::spec {

struct AcceptanceResult {
  int n_accepted = 0;       // drafts d1..d_n kept, 0 <= n <= k
  int32_t next_token = -1;  // the correction after a rejection, or the bonus after k accepts
};

// The random decisions of the sampled lane, behind one small seam. Production uses RngDecisions
// (one uniform each, below); the exact-law test implements it to enumerate every outcome with
// its exact probability while running this production code unchanged.
class Decisions {
 public:
  virtual ~Decisions() = default;
  // True with probability `prob`, which is in [0, 1].
  virtual bool accept(double prob) = 0;
  // Index i with probability weights[i] / sum(weights); weights are >= 0 with a positive sum.
  virtual int32_t draw(std::span<const double> weights) = 0;
};

// Decisions from uniforms: accept is `u < prob` (so prob 1 always accepts and prob 0 never
// does); draw is the inverse CDF of sampling::draw on doubles (first index whose running sum
// exceeds u * sum; zero-weight indices are never returned). Each consumes exactly one uniform.
class RngDecisions final : public Decisions {
 public:
  explicit RngDecisions(sampling::Rng& rng) : rng_(rng) {}
  bool accept(double prob) override;
  int32_t draw(std::span<const double> weights) override;

 private:
  sampling::Rng& rng_;
};

// Deliberate mistakes an Acceptor can be built with, so the exact-law and greedy tests can show
// they catch each one while running this production code. Tests only.
// Why an enum: each defect is one branch at a point reached at most once per cycle (the residual,
// the bonus, the count), so the hot accept loop is untouched and the production code path is the
// one under test; a policy template would put the whole body in this header and instantiate a
// second copy of it, and virtual hooks would split the rule across classes.
// "q taken before top-k" is not here: which transforms produced q is the caller's business, so
// the test plants that defect in its harness (q reported without the truncation it was drawn
// with).
enum class AcceptanceDefect {
  None,
  ResidualWithoutClamp,   // residual p - q without max(0, .); a draw cannot take negative
                          // weights, so it uses the magnitude |p - q| (its drawable form)
  BonusFromQ,             // after k accepts, bonus drawn from q_k (one-hot: d_k) instead of p_k
  AcceptedCountOffByOne,  // after a rejection at draft i, reports i accepted (the rejected draft
                          // is committed too); both lanes
  ResidualIsP,            // after a rejection, draws from p instead of the residual (the
                          // "resample the target" shortcut: biased towards the rejected draft)
};

class Acceptor {
 public:
  // Sizes the scratch row for `n_vocab` tokens (InvalidArgument if n_vocab <= 0). No allocation
  // after this.
  explicit Acceptor(int n_vocab);
  // Tests only: an Acceptor with a planted defect.
  static Acceptor with_planted_defect(int n_vocab, AcceptanceDefect defect);

  int n_vocab() const { return n_vocab_; }

  // Greedy lane. draft: [k]; p: [k + 1, n_vocab] (one-hot or logit rows, see above).
  [[nodiscard]] AcceptanceResult greedy(std::span<const int32_t> draft,   // [k]
                                        std::span<const float> p) const;  // [k + 1, n_vocab]

  // Sampled lane. q is [k, n_vocab] (q_i is the row d_i was drawn from) or empty for a
  // deterministic drafter (q_i = one-hot on d_i). Rows are >= 0 with positive sums; p rows are
  // only read as far as the cycle gets. k = 0 is plain AR sampling from p_0.
  [[nodiscard]] AcceptanceResult sampled(std::span<const int32_t> draft,  // [k]
                                         std::span<const float> q,        // [k, n_vocab] or empty
                                         std::span<const float> p,        // [k + 1, n_vocab]
                                         sampling::Rng& rng);
  // The same with the random decisions injected (the exact-law test enumerates through this).
  [[nodiscard]] AcceptanceResult sampled(std::span<const int32_t> draft,  // [k]
                                         std::span<const float> q,        // [k, n_vocab] or empty
                                         std::span<const float> p,        // [k + 1, n_vocab]
                                         Decisions& decisions);

 private:
  Acceptor(int n_vocab, AcceptanceDefect defect);
  void check_shapes(std::span<const int32_t> draft, std::span<const float> q,
                    std::span<const float> p) const;
  // The count reported after a rejection at draft index `n_accepted` (0-based).
  int rejected_count(int n_accepted, int k) const;

  int n_vocab_;
  AcceptanceDefect defect_ = AcceptanceDefect::None;
  std::vector<double> weights_;  // [n_vocab] residual or bonus row handed to Decisions::draw
};

}  // namespace augur::spec
