// The evidence rules over a structurally sound "run" report (docs/bench-report.md, "Evidence
// rules"). Every verdict is re-derived from the samples and the run's configuration: no label,
// flag, key or summary figure of the report is believed on its own.
#pragma once

#include <vector>

#include "bench/evidence_gate.h"
#include "bench/run_report.h"

namespace augur::bench::evidence {

// Every rule, in the doc's table order, over the report's own claims (run.speedups).
std::vector<Violation> check_run_evidence(const RunReport& run);

// The violations that forbid claiming `claim` (its value included) in this run: the rules a
// harness must pass before it writes the claim. Empty: the claim is supported.
std::vector<Violation> claim_violations(const RunReport& run, const Speedup& claim);

// Median decode tok/s of an arm's measured samples; nullopt without any.
std::optional<double> measured_decode_median(const RunReport& run, const std::string& arm);

struct Mismatch {
  const Sample* sample;
  const Sample* reference;  // the first AR sample of the prompt
  size_t at;                // first differing token (a length difference counts)
};
// Samples (warm-ups included) whose tokens differ from the first AR sample of their prompt, in a
// run that decodes deterministically (decodes_deterministically); nothing otherwise.
std::vector<Mismatch> equivalence_mismatches(const RunReport& run);

}  // namespace augur::bench::evidence
