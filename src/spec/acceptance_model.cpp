#include "spec/acceptance_model.h"

#include <algorithm>

#include "common/error.h"

namespace augur::spec {
namespace {

constexpr double kAlpha = 0.05;         // per observation of one position
constexpr double kPriorWeight = 0.5;    // pseudo-observations of the prior behind each estimate
constexpr double kNeutralPrior = 0.5;   // a_1 of a drafter never seen
constexpr double kUntriedDecay = 0.04;  // weight lost per block that stopped short of a position
constexpr double kEnoughData = 3;       // weight of a confidence bin that is trusted alone
constexpr double kSurprise = 0.02;      // tail probability of an outcome that means change

}  // namespace

void AcceptanceModel::Ewma::add(double x, double alpha) {
  // Until about 1/alpha observations, a plain mean (weight counts them); then an EWMA.
  weight = weight * (1 - alpha) + 1;
  value += (x - value) / std::min(weight, 1 / alpha);
}

AcceptanceModel::AcceptanceModel(int k_max) : position_(static_cast<size_t>(std::max(k_max, 1))) {}

size_t AcceptanceModel::bin_of(float confidence) {
  return static_cast<size_t>(std::upper_bound(kBinEdges.begin(), kBinEdges.end(), confidence) -
                             kBinEdges.begin());
}

double AcceptanceModel::shrunk(const Ewma& e, double prior) const {
  return (e.weight * e.value + kPriorWeight * prior) / (e.weight + kPriorWeight);
}

void AcceptanceModel::observe(int drafted, int accepted, std::span<const float> confidence) {
  AUGUR_CHECK(accepted >= 0 && accepted <= drafted, "accepted drafts are a prefix of the drafts");
  if (drafted == 0) return;
  ++observations_;
  if (!confidence.empty()) ++with_confidence_;
  // Positions past the block were not tried: they lose weight and lean more on the position
  // before, so a block length the policy stopped using (when the text was harder) looks worth
  // trying again once the shorter positions do well.
  for (size_t i = static_cast<size_t>(drafted); i < position_.size(); ++i) {
    position_[i].weight *= 1 - kUntriedDecay;
  }
  // An outcome far in a tail of what the estimates predict means the text changed (prose turned
  // into code being copied, or back): the old observations lose half their weight, so the new
  // ones take over within a few cycles instead of dozens.
  double at_least = 1;  // P(at least `accepted` kept)
  for (int i = 1; i <= accepted; ++i) at_least *= rate(i);
  const double at_most = accepted < drafted ? 1 - at_least * rate(accepted + 1) : 1;
  if (at_least < kSurprise || at_most < kSurprise) {
    for (Ewma& e : position_) e.weight *= 0.5;
  }
  const int reached = std::min(drafted, accepted + 1);
  for (int i = 0; i < reached && i < static_cast<int>(position_.size()); ++i) {
    const double kept = i < accepted ? 1.0 : 0.0;
    position_[static_cast<size_t>(i)].add(kept, kAlpha);
    if (static_cast<size_t>(i) < confidence.size()) {
      by_confidence_[bin_of(confidence[static_cast<size_t>(i)])].add(kept, kAlpha / 2);
    }
  }
}

double AcceptanceModel::rate(int position) const {
  AUGUR_CHECK(position >= 1, "positions count from 1");
  double prior = kNeutralPrior;
  double estimate = prior;
  const int n = std::min(position, static_cast<int>(position_.size()));
  for (int i = 0; i < n; ++i) {
    estimate = shrunk(position_[static_cast<size_t>(i)], prior);
    prior = estimate;
  }
  return estimate;
}

double AcceptanceModel::rate_given(int position, float confidence) const {
  return shrunk(by_confidence_[bin_of(confidence)], rate(position));
}

double AcceptanceModel::confident_rate(int position) const {
  for (size_t bin = by_confidence_.size(); bin-- > 0;) {
    if (by_confidence_[bin].weight >= kEnoughData) {
      return shrunk(by_confidence_[bin], rate(position));
    }
  }
  return rate(position);
}

double AcceptanceModel::expected_accepted(int k) const {
  double all_kept = 1, sum = 0;
  for (int j = 1; j <= k; ++j) {
    all_kept *= rate(j);
    sum += all_kept;
  }
  return sum;
}

}  // namespace augur::spec
