#include "spec/draft_policy.h"

#include <algorithm>

#include "common/error.h"

namespace augur::spec {
namespace {

constexpr int64_t kExplorePeriod = 50;  // at most one exploring cycle in this many
constexpr double kExploreShare = 0.02;  // of the time spent in cycles, at most this in exploring
constexpr double kMaxSavedCycles = 3;   // the budget saved up: this many best cycles' time
constexpr int64_t kFollowUpPeriod = 8;  // after a surprise, look again this soon
constexpr double kSurprise = 0.75;      // kept drafts above the prediction that count as one
constexpr int kNone = -2;               // no option

CyclePlan with_best_rate(CyclePlan plan, double best_rate) {
  plan.best_rate = best_rate;
  return plan;
}
constexpr int64_t kTrialBlocks = 4;    // blocks every source drafts before it is judged
constexpr double kMinRateGain = 1e-3;  // a drafting plan must beat AR by this share
constexpr double kExploreCost = 1.5;   // an exploring cycle may cost this much of the best

}  // namespace

DraftPolicy::DraftPolicy(std::vector<std::string> source_names, int k_max)
    : names_(std::move(source_names)),
      k_max_(k_max),
      costs_(k_max + 1, static_cast<int>(names_.size())),
      acceptance_(names_.size(), AcceptanceModel(k_max)),
      last_used_(names_.size(), -1),
      next_explore_(kExplorePeriod) {
  AUGUR_CHECK(k_max >= 1, "a policy plans blocks of at least one draft");
}

const AcceptanceModel& DraftPolicy::acceptance(int source) const {
  AUGUR_CHECK(source >= 0 && source < static_cast<int>(names_.size()), "a known source");
  return acceptance_[static_cast<size_t>(source)];
}

double DraftPolicy::expected_tokens(int source, int k) const {
  if (source == kArStep || k == 0) return 1;
  return 1 + acceptance(source).expected_accepted(k);
}

double DraftPolicy::cycle_seconds(int source, int k) const {
  const int rows = (source == kArStep ? 0 : k) + 1;
  const double draft = source == kArStep ? 0 : draft_seconds(source, k);
  return draft + verify_seconds(rows) + other_seconds(rows);
}

std::pair<int, double> DraftPolicy::best_block(int source, int k_cap, bool confident) const {
  int best_k = 0;
  double best_rate = 0;
  const AcceptanceModel& acc = acceptance(source);
  double all_kept = 1, tokens = 1;
  for (int k = 1; k <= k_cap; ++k) {
    all_kept *= confident ? acc.confident_rate(k) : acc.rate(k);
    tokens += all_kept;
    const double seconds = cycle_seconds(source, k);
    const double rate = seconds > 0 ? tokens / seconds : 0;
    if (rate > best_rate) best_k = k, best_rate = rate;
  }
  return {best_k, best_rate};
}

int DraftPolicy::exploring_block(int source, int cap, int best_source, int best_k) const {
  // The longest block that costs at most half again the cycle it replaces: longer blocks teach
  // more positions, and a cheap drafter (n-gram) can afford them.
  const double budget = kExploreCost * cycle_seconds(best_source, best_k);
  int k = std::max(1, best_block(source, cap).first);
  while (k < cap && cycle_seconds(source, k + 1) <= budget) ++k;
  return k;
}

CyclePlan DraftPolicy::plan_for(int source, int k, bool explore) const {
  CyclePlan plan;
  plan.source = k > 0 ? source : kArStep;
  plan.k = k;
  plan.explore = explore;
  plan.predicted_tokens = expected_tokens(plan.source, k);
  plan.predicted_s = cycle_seconds(plan.source, k);
  return plan;
}

CyclePlan DraftPolicy::choose(std::span<const int> available) {
  AUGUR_CHECK(available.size() == names_.size(), "one availability per source");
  // Without any verify timing there is nothing to weigh: an AR step measures T_V(1).
  if (!costs_known()) return plan_for(kArStep, 0, false);
  const double ar_seconds = cycle_seconds(kArStep, 0);
  double best_rate = ar_seconds > 0 ? (1 + kMinRateGain) / ar_seconds : 0;
  int best_source = kArStep, best_k = 0;
  for (size_t s = 0; s < names_.size(); ++s) {
    const int cap = std::min(available[s], k_max_);
    if (cap <= 0) continue;
    const auto [k, rate] = best_block(static_cast<int>(s), cap);
    if (k > 0 && rate > best_rate) best_source = static_cast<int>(s), best_k = k, best_rate = rate;
  }
  // A source with fewer than a few blocks behind its estimates gets them first, the least tried
  // one first: one unlucky first block must not hide a good drafter for hundreds of cycles.
  int trial = kNone;
  for (size_t s = 0; s < names_.size(); ++s) {
    const long blocks = acceptance_[s].blocks();
    if (available[s] > 0 && blocks < kTrialBlocks &&
        (trial == kNone || blocks < acceptance_[static_cast<size_t>(trial)].blocks())) {
      trial = static_cast<int>(s);
    }
  }
  if (trial != kNone) {
    const int cap = std::min(available[static_cast<size_t>(trial)], k_max_);
    return with_best_rate(plan_for(trial, exploring_block(trial, cap, best_source, best_k), true),
                          best_rate);
  }
  // Exploring is paid from a time budget: 2 % of every cycle's time is saved, and an exploring
  // cycle spends the time it lost against the best plan (a drafter that turns out slow, e.g.
  // one catching up on many committed tokens, leaves the budget in debt until it is repaid).
  explore_budget_s_ =
      std::min(explore_budget_s_, kMaxSavedCycles * cycle_seconds(best_source, best_k));
  if (cycles_ >= next_explore_ && explore_budget_s_ > 0) {
    // The option other than the best used longest ago (never: first): an available source, or
    // a plain AR step, whose cost T_V(1) + rest goes stale too while the policy drafts.
    int stale = kNone;
    int64_t stale_used = 0;
    const auto consider = [&](int option, int64_t used) {
      if (option == best_source) return;
      if (stale == kNone || used < stale_used) stale = option, stale_used = used;
    };
    for (size_t s = 0; s < names_.size(); ++s) {
      if (available[s] > 0) consider(static_cast<int>(s), last_used_[s]);
    }
    consider(kArStep, last_ar_);
    if (stale == kArStep) return with_best_rate(plan_for(kArStep, 0, true), best_rate);
    if (stale != kNone) {
      // The longest block that costs at most half again the cycle it replaces: longer blocks
      // teach more positions, and a cheap drafter (n-gram) can afford them.
      const int cap = std::min(available[static_cast<size_t>(stale)], k_max_);
      return with_best_rate(plan_for(stale, exploring_block(stale, cap, best_source, best_k), true),
                            best_rate);
    }
  }
  CyclePlan plan = with_best_rate(plan_for(best_source, best_k, false), best_rate);
  // A drafter whose confidences tell good tokens from bad may plan the block it would draft if
  // it were sure; the stop rule cuts it at the first token not worth its row.
  if (best_source != kArStep && acceptance(best_source).has_confidences()) {
    const int cap = std::min(available[static_cast<size_t>(best_source)], k_max_);
    plan.k = std::max(plan.k, best_block(best_source, cap, /*confident=*/true).first);
  }
  return plan;
}

bool DraftPolicy::keep_drafting(const CyclePlan& plan, std::span<const float> confidence) const {
  const int have = static_cast<int>(confidence.size());
  if (plan.source == kArStep || have >= plan.k) return false;
  if (plan.explore) return true;  // an exploration measures the whole block
  const AcceptanceModel& acc = acceptance(plan.source);
  // What the drafts so far are worth, from their own confidences.
  double all_kept = 1, tokens = 1;
  for (int i = 0; i < have; ++i) {
    all_kept *= acc.rate_given(i + 1, confidence[static_cast<size_t>(i)]);
    tokens += all_kept;
  }
  const double seconds = cycle_seconds(plan.source, have);
  const double stop_rate = seconds > 0 ? tokens / seconds : 0;
  // Worth going on if some longer block, with position rates for the tokens not yet drafted,
  // beats stopping here.
  for (int k = have + 1; k <= plan.k; ++k) {
    all_kept *= acc.rate(k);
    tokens += all_kept;
    const double s = cycle_seconds(plan.source, k);
    if (s > 0 && tokens / s > stop_rate) return true;
  }
  return false;
}

void DraftPolicy::record(const CyclePlan& plan, const CycleOutcome& outcome) {
  const int rows = outcome.drafted + 1;
  costs_.observe_verify(rows, outcome.verify_s);
  costs_.observe_other(rows, outcome.other_s);
  // What exploring cost: the time beyond what the best plan would have taken for the same
  // tokens (negative when the exploration did better, which refunds the budget).
  const double seconds = outcome_seconds(plan, outcome);
  explore_budget_s_ += kExploreShare * seconds;
  if (plan.explore && plan.best_rate > 0) {
    explore_budget_s_ -= seconds - (outcome.accepted + 1) / plan.best_rate;
  }
  if (plan.source != kArStep) {
    const auto s = static_cast<size_t>(plan.source);
    // A source that drafted in the cycle before had no committed tokens to catch up on.
    costs_.observe_draft(plan.source, outcome.drafted, outcome.draft_s,
                         last_source_ == plan.source);
    const double predicted_kept = acceptance_[s].expected_accepted(outcome.drafted);
    acceptance_[s].observe(outcome.drafted, outcome.accepted, outcome.confidence);
    last_used_[s] = cycles_;
    if (plan.explore) {
      const bool surprise = outcome.accepted > predicted_kept + kSurprise;
      next_explore_ = cycles_ + (surprise ? kFollowUpPeriod : kExplorePeriod);
    }
  }
  if (plan.source == kArStep) {
    last_ar_ = cycles_;
    if (plan.explore) next_explore_ = cycles_ + kExplorePeriod;
  }
  last_source_ = plan.source;
  ++cycles_;
}

}  // namespace augur::spec
