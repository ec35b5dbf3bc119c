// MEMORY_CLAIM over a run report's cache figures (samples[].cache_memory, bench/cache_figures.h):
// every figure recomputed from its raw inputs, and the sample's measured memory checked to hold
// what its caches claim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/run_report.h"

namespace augur::bench::evidence {

// Appends one line per problem of `arm`'s samples; model_bytes: the model files the arm reads.
// Once any sample of the report carries cache_memory, every sample must.
void check_cache_memory(const RunReport& run, const Arm& arm, int64_t model_bytes,
                        std::vector<std::string>& problems);

}  // namespace augur::bench::evidence
