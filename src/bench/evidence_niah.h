// The evidence gate over "niah" reports (bench/niah.h): recall and probabilities are recomputed
// from the per-sample tokens and probabilities, never read from the summary; every (context,
// cache type, depth) the config names must have its samples; a cell's K/V bytes are one figure.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "bench/evidence_schema.h"

namespace augur::bench::evidence {

// Per (context, cache type): samples, recovered (greedy tokens == the value's), recall, mean
// probability of the whole value (product of its token probabilities), recall per depth and the
// cache's kv_bytes. `samples` as run_niah writes them, already checked.
nlohmann::json niah_summary(const nlohmann::json& samples);

// Structural defects and summary figures the samples do not give go to `schema` (SCHEMA).
std::vector<Violation> check_niah(const nlohmann::json& report, SchemaReader& schema);

}  // namespace augur::bench::evidence
