// The evidence gate over reports that make no comparison between arms: "verify-curve" and
// "roofline" (docs/bench-report.md). Their figures must follow from the samples they carry (each
// median, spread and ratio is recomputed; a figure without samples behind it is a defect) and
// their memory figures must be measured.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "bench/evidence_schema.h"

namespace augur::bench::evidence {

// Structural and arithmetic defects go to `schema`; returns the evidence violations
// (MEMORY_CLAIM), empty when the schema is not clean.
std::vector<Violation> check_verify_curve(const nlohmann::json& report, SchemaReader& schema);
std::vector<Violation> check_roofline(const nlohmann::json& report, SchemaReader& schema);

}  // namespace augur::bench::evidence
