// How often one drafter's tokens survive verification, as the draft policy predicts it
// (docs/policy.md). Per draft position i, the conditional acceptance a_i = P(d_i kept | d_1 ..
// d_{i-1} kept), an EWMA over the cycles that reached position i; so the expected number of kept
// drafts of a block of k is sum_{j<=k} prod_{i<=j} a_i. A position with little data leans on the
// one before it (and position 1 on a neutral prior), so an untried longer block looks as good as
// the last tried position, which is what makes the policy try it.
//
// For drafters that report a confidence per token (a model's q(d_i), or its softmax at
// temperature 1 when greedy) the acceptance is also kept per confidence bin, so a policy can
// stop drafting when the tokens it already has make the next row not worth its verify cost.
#pragma once

#include <array>
#include <span>
#include <vector>

namespace augur::spec {

class AcceptanceModel {
 public:
  explicit AcceptanceModel(int k_max);

  // One verified block: `drafted` tokens, the first `accepted` kept; confidences [drafted] or
  // empty. Positions past accepted + 1 were not reached and teach nothing.
  void observe(int drafted, int accepted, std::span<const float> confidence);

  // a_i for position i in 1..k_max.
  double rate(int position) const;
  // P(d_i kept | reached) for a token drafted with this confidence; rate(position) while the
  // confidence bin has little data.
  double rate_given(int position, float confidence) const;
  // P(d_i kept | reached) for the most confident tokens this drafter produces often enough to
  // have a estimate (the highest confidence bin with data); rate(position) without one.
  double confident_rate(int position) const;
  // sum_{j<=k} prod_{i<=j} a_i: the expected kept drafts of a block of k.
  double expected_accepted(int k) const;
  // Whether any block was observed.
  bool tried() const { return observations_ > 0; }
  // Blocks observed so far.
  long blocks() const { return observations_; }
  // Whether tokens were observed with confidences (the drafter reports them).
  bool has_confidences() const { return with_confidence_ > 0; }

 private:
  struct Ewma {
    double value = 0;
    double weight = 0;
    void add(double x, double alpha);
  };
  static constexpr std::array<float, 8> kBinEdges = {0.1f,  0.2f, 0.35f, 0.5f,
                                                     0.65f, 0.8f, 0.9f,  0.97f};
  static size_t bin_of(float confidence);
  double shrunk(const Ewma& e, double prior) const;

  std::vector<Ewma> position_;                            // [k_max]
  std::array<Ewma, kBinEdges.size() + 1> by_confidence_;  // per confidence bin
  long observations_ = 0;
  long with_confidence_ = 0;
};

}  // namespace augur::spec
