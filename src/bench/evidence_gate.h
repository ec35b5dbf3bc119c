// The evidence gate for benchmark reports (`augur.bench/1`, docs/bench-report.md): checks that a
// report's claims are what its samples show. It owns the rules and their messages; it does not
// read files, run benchmarks or compute the summary (the harness does).
//
// Rules are recomputed from `samples`; summary figures are only trusted where the samples cannot
// tell. A report with structural defects gets only `SCHEMA` violations: the evidence rules are
// not run over a report whose fields cannot be trusted to mean what the doc says, so a missing
// field never shows up as a misleading `SAMPLES` or `EQUIVALENCE` line.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace augur::bench {

struct Violation {
  std::string rule;     // "SCHEMA", "SPEC_NEVER_RAN", ... (docs/bench-report.md)
  std::string message;  // names the arm, prompt and values so a human can fix the report
};

// Every rule over the report, SCHEMA first, then the evidence rules in the doc's table order;
// empty when clean. Never throws on malformed input: a report that is not an object, an unknown
// schema or kind, missing fields and wrong types are SCHEMA violations. Repeats of one defect
// are folded (at most one violation per arm, or per (arm, prompt) for EQUIVALENCE).
[[nodiscard]] std::vector<Violation> check_report(const nlohmann::json& report);

// One "RULE: message\n" line per violation; "" when there are none.
[[nodiscard]] std::string format_violations(const std::vector<Violation>& violations);

}  // namespace augur::bench
