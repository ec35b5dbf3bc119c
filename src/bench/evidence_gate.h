// The evidence gate for benchmark reports (`augur.bench/1`, docs/bench-report.md): checks that a
// report's claims are what its samples show. It is the only judge: the harness writes its summary
// and decides its claims with summarize_run, which applies the same rules.
//
// Every verdict is re-derived from the samples and the run's configuration; no label, flag, key
// or summary figure is believed on its own (a summary figure that the samples do not give is a
// violation). A report with structural defects gets only `SCHEMA` violations: the evidence rules
// are not run over a report whose fields cannot be trusted to mean what the doc says, so a
// missing field never shows up as a misleading `SAMPLES` or `EQUIVALENCE` line.
//
// Files: evidence_schema (typed reading), run_report (a run in typed form and its derived
// figures), evidence_run (the rules over runs), evidence_measurements (verify-curve, roofline).
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

// The summary of a "run" report that has config, models, arms and samples: every arm's figures
// from its samples, and for each spec arm a speedup claim over the AR arm when the evidence rules
// allow it, otherwise an entry in "withheld" per rule that forbids it. InvalidArgument when the
// report's structure is not sound (a harness bug).
[[nodiscard]] nlohmann::json summarize_run(const nlohmann::json& report);

// The summary of a "serve" report that has config, arms and samples: per (arm, clients) cell its
// figures from the samples, and per client count a speedup of the spec arm over the ar arm when
// the rules allow it, otherwise "withheld" entries naming the rules. InvalidArgument when the
// report's structure is not sound (a harness bug).
[[nodiscard]] nlohmann::json summarize_serve(const nlohmann::json& report);

// One "RULE: message\n" line per violation; "" when there are none.
[[nodiscard]] std::string format_violations(const std::vector<Violation>& violations);

}  // namespace augur::bench
