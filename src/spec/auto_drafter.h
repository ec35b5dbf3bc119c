// `--draft auto`: a DraftSource that owns no model of its own but plans over several (a draft
// model, n-gram lookup, layer-skip at a few depths) with a DraftPolicy. Each cycle it looks at
// what the free sources (n-gram) have, asks the policy for (source, k), and lets that source draft
// (with the policy's dynamic stop), or drafts nothing (an AR step). Verify costs come from a
// calibration at the first generation and from every cycle's timing (DraftSource::calibrate /
// observe_cost); what it learns persists across the generations of a session.
//
// Sources it does not pick keep their caches; a model drafter catches up on the committed tokens
// it missed the next time it drafts. Per generation it counts what it chose (PolicyStats), and it
// can write one JSON line per cycle (set_log).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "spec/draft_policy.h"
#include "spec/draft_source.h"

namespace augur::spec {

// What the policy did during one generation.
struct PolicyStats {
  std::vector<std::string> sources;
  std::vector<int64_t> cycles_by_source;  // [sources] cycles each drafted (explorations included)
  int64_t ar_steps = 0;                   // cycles without drafts
  int64_t explorations = 0;
  int64_t drafted = 0;          // draft tokens over all cycles
  double predicted_tokens = 0;  // sum over cycles of the predicted committed tokens
  double observed_tokens = 0;   // sum over cycles of the committed tokens
  double predicted_s = 0;       // sum over cycles of the predicted cycle seconds
  double observed_s = 0;        // sum over cycles of draft + verify + rest
  double calibration_s = 0;     // spent timing verify forwards at the start (first run)
  int64_t cycles() const;
  double mean_k() const { return cycles() > 0 ? static_cast<double>(drafted) / cycles() : 0; }
};

// The stats as reported (`--json` stats.policy, benchmark samples): cycles per source, AR steps,
// explorations, mean k, predicted vs observed tokens and seconds per cycle, calibration time.
nlohmann::json to_json(const PolicyStats& stats);

class AutoDrafter final : public DraftSource {
 public:
  // sources: at least one; k_max: the largest block (the engine's --draft-max); labels: a
  // distinct name per source for stats and logs (empty: each source's name()).
  AutoDrafter(std::vector<std::unique_ptr<DraftSource>> sources, int k_max,
              std::vector<std::string> labels = {});
  // With a policy of the caller's (tests: fixed costs or planted defects); its sources() are the
  // labels of `sources`, in order.
  AutoDrafter(std::vector<std::unique_ptr<DraftSource>> sources,
              std::unique_ptr<DraftPolicy> policy);

  std::string name() const override { return "auto"; }
  void begin(std::span<const int32_t> prompt) override;
  void reset() override;
  void propose(const DraftRequest& request, Draft& out) override;
  void observe(int n_accepted) override;
  int64_t memory_bytes() const override;
  void calibrate(const VerifyTimer& time_verify) override;
  void observe_cost(const CycleCost& cost) override;
  void share_forwards(model::ForwardBatcherSet& batchers) override;
  // The union of its sources' taps; each feature-reading source gets every row's features,
  // chosen or not, so it can catch up when the policy next picks it.
  std::span<const int32_t> feature_layers() const override { return taps_; }
  void take_features(int64_t first, int64_t n, int64_t n_embd, const float* features) override;
  int64_t reusable_prefix(std::span<const int32_t> prompt) const override;

  // One JSON object per cycle to `log` (null: none); the stream must outlive the drafter.
  void set_log(std::ostream* log) { log_ = log; }
  const PolicyStats& stats() const { return stats_; }
  // The plan of the current (or last) cycle.
  const CyclePlan& last_plan() const { return plan_; }
  const DraftPolicy& policy() const { return *policy_; }
  // The sources, in the order of policy().sources() (memory reports walk their caches).
  size_t n_sources() const { return sources_.size(); }
  const DraftSource& source(size_t i) const { return *sources_.at(i); }

 private:
  std::vector<std::unique_ptr<DraftSource>> sources_;
  std::unique_ptr<DraftPolicy> policy_;
  std::vector<int32_t> taps_;       // union of the sources' feature layers
  std::vector<float> slice_;        // one source's share of the features
  std::vector<Draft> free_drafts_;  // [sources] this cycle's proposals of free sources
  std::vector<int> available_;      // [sources]
  std::vector<int64_t> exploited_;  // [sources] cycles each was chosen as best, this run
  CyclePlan plan_;
  int n_drafted_ = 0, n_accepted_ = 0;
  std::vector<float> confidence_;  // of this cycle's drafts
  double chosen_s_ = 0;            // the chosen source's propose + observe this cycle
  bool calibrated_ = false;
  bool first_run_ = true;
  std::ostream* log_ = nullptr;
  PolicyStats stats_;
};

}  // namespace augur::spec
