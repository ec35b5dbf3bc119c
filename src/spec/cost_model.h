// What a speculative cycle costs, as the draft policy predicts it (docs/policy.md): the target's
// verify time T_V(m) for m rows, each drafter's time per drafted token, and the rest of the cycle
// (sampling the m rows, acceptance, bookkeeping) per row. Seeded by a calibration at the start
// of a session and refined online from every cycle the engine times.
//
// T_V(m) is kept per m as an exponentially weighted moving average (EWMA). One observation also
// nudges every other m by a fraction of its surprise, so a drift that moves the whole curve
// (a growing context, a busier machine) reaches rows the policy is not using at the moment.
// m without any data is interpolated linearly between known neighbours, or extrapolated with the
// slope of the last two.
#pragma once

#include <span>
#include <vector>

namespace augur::spec {

class CostModel {
 public:
  // max_rows: the largest verify the engine runs (k_max + 1); n_sources: drafters planned over.
  CostModel(int max_rows, int n_sources);

  // Measured T_V(1..n) (seconds, n <= max_rows); replaces what was known for those m.
  void calibrate_verify(std::span<const double> seconds);
  void observe_verify(int rows, double seconds);
  // Predicted T_V(rows); 0 until anything is known.
  double verify_seconds(int rows) const;
  bool verify_known() const;

  // A propose + observe of `source` that drafted k tokens took `seconds`. `steady`: the source
  // also drafted in the cycle before, so no catch-up of committed tokens is in the time.
  void observe_draft(int source, int k, double seconds, bool steady);
  // Predicted draft time of k tokens (0 for k = 0 or a source never timed).
  double draft_seconds(int source, int k) const;

  void observe_other(int rows, double seconds);
  double other_seconds(int rows) const;

 private:
  struct Ewma {
    double value = 0;
    double weight = 0;  // decayed count of observations behind value (0: nothing known)
    void add(double x, double alpha);
  };
  std::vector<Ewma> verify_;        // [max_rows], index m - 1
  std::vector<Ewma> draft_steady_;  // [n_sources] seconds per drafted token
  std::vector<Ewma> draft_any_;     // [n_sources] the same, catch-up included
  Ewma other_per_row_;
};

}  // namespace augur::spec
