// The draft policy (docs/policy.md): before every speculative cycle, choose which drafter drafts
// and how many tokens (k = 0: one plain AR step) so that the expected committed tokens per second
// of the whole cycle is largest:
//
//   rate(s, k) = (1 + sum_{j<=k} prod_{i<=j} a_{s,i}) / (T_D(s, k) + T_V(k + 1) + T_O(k + 1))
//
// with a_{s,i} from each source's AcceptanceModel and the times from the CostModel; and while a
// drafter with confidences drafts, stop it when the tokens it has make one more row not worth
// its cost (keep_drafting). Every few dozen cycles one cycle explores the source left unused
// longest, so estimates of what is not chosen stay fresh: at most 2 % of the time (a budget in
// seconds), sooner after an exploration that did much better than predicted, so a drafter that
// starts paying is picked up.
//
// Exactness: every decision uses only the past (estimates, timings), the committed context and
// the drafts of this cycle, never the target's output for this cycle; so greedy output stays
// AR's and the sampled law stays exact (a stopping rule over already drafted tokens does not
// change the law of any committed token; see docs/policy.md).
//
// Pure logic with no clock and no model: the engine (AutoDrafter) and the simulation tests feed
// it the same calls.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "spec/acceptance_model.h"
#include "spec/cost_model.h"

namespace augur::spec {

inline constexpr int kArStep = -1;  // the "source" of a plan without drafts

struct CyclePlan {
  int source = kArStep;         // index into the policy's sources, or kArStep
  int k = 0;                    // drafts wanted (0 for an AR step)
  bool explore = false;         // chosen to refresh estimates, not because it looked best
  double predicted_tokens = 1;  // expected committed tokens of the cycle
  double predicted_s = 0;       // expected seconds of the cycle
  double best_rate = 0;         // tokens per second of the best plan when this one was made
};

struct CycleOutcome {
  int drafted = 0;
  int accepted = 0;
  std::span<const float> confidence;  // [drafted] or empty
  double draft_s = 0;                 // the chosen source's propose + observe
  double verify_s = 0;                // the target forward of drafted + 1 rows
  double other_s = 0;                 // the rest of the cycle
};

class DraftPolicy {
 public:
  // One entry per source, in the order the plans index them; k_max caps every block.
  DraftPolicy(std::vector<std::string> source_names, int k_max);
  virtual ~DraftPolicy() = default;

  void calibrate_verify(std::span<const double> seconds) { costs_.calibrate_verify(seconds); }

  // available[s]: how many tokens source s can draft this cycle (a free source's proposal
  // length; 0: nothing to offer), each at most the cycle's cap.
  CyclePlan choose(std::span<const int> available);
  // After drafting `confidence.size()` tokens of `plan` (fewer than plan.k): draft another?
  bool keep_drafting(const CyclePlan& plan, std::span<const float> confidence) const;
  // The plan of a cycle that cannot draft (no room left): one AR step, with its predictions.
  CyclePlan ar_step() const { return plan_for(kArStep, 0, false); }
  void record(const CyclePlan& plan, const CycleOutcome& outcome);

  // The estimates behind the choice.
  double expected_tokens(int source, int k) const;  // 1 + expected kept drafts
  double cycle_seconds(int source, int k) const;    // draft + verify + rest
  const std::vector<std::string>& sources() const { return names_; }
  int k_max() const { return k_max_; }
  const CostModel& costs() const { return costs_; }
  const AcceptanceModel& acceptance(int source) const;
  int64_t cycles() const { return cycles_; }

 protected:
  // Overridable so tests can plant defects (a policy blind to one cost must fail them).
  virtual double verify_seconds(int rows) const { return costs_.verify_seconds(rows); }
  virtual double draft_seconds(int source, int k) const { return costs_.draft_seconds(source, k); }
  virtual double other_seconds(int rows) const { return costs_.other_seconds(rows); }
  // What a recorded cycle took: its measured seconds (tests: a fixed cost model's, to make the
  // exploration budget, the one other place timings enter, repeat from run to run).
  virtual double outcome_seconds(const CyclePlan& /*plan*/, const CycleOutcome& outcome) const {
    return outcome.draft_s + outcome.verify_s + outcome.other_s;
  }
  // False while nothing is known about verify costs (the policy then takes AR steps).
  virtual bool costs_known() const { return costs_.verify_known(); }

 private:
  // The best k in 1..k_cap for source s, and its rate; `confident`: if every token were drafted
  // with the drafter's highest usual confidence.
  std::pair<int, double> best_block(int source, int k_cap, bool confident = false) const;
  CyclePlan plan_for(int source, int k, bool explore) const;
  // k for an exploring block of `source` (at most cap) that replaces the best plan's cycle.
  int exploring_block(int source, int cap, int best_source, int best_k) const;

  std::vector<std::string> names_;
  int k_max_;
  CostModel costs_;
  std::vector<AcceptanceModel> acceptance_;  // [sources]
  std::vector<int64_t> last_used_;           // [sources] cycle a source last drafted, -1 never
  int64_t last_ar_ = -1;                     // cycle of the last AR step, -1 never
  int64_t cycles_ = 0;
  int64_t next_explore_ = 0;     // cycle at which the next exploration is due
  double explore_budget_s_ = 0;  // seconds of exploring allowed now (negative: in debt)
  int last_source_ = kArStep;
};

}  // namespace augur::spec
