// `augur bench run`: every arm on every prompt, repeated, arm order rotating between repeats,
// warm-up rounds excluded; prefill and decode timed separately (decode-only tok/s is the
// headline). Produces a report of schema augur.bench/1 (docs/bench-report.md) with samples and a
// summary; speedups are only claimed when the samples support them, otherwise withheld with the
// reason.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/arms.h"
#include "cache/model_cache.h"
#include "sampling/sampler.h"
#include "spec/acceptance.h"

namespace augur::bench {

struct BenchRunConfig {
  std::string target_path;
  std::string draft_path;    // required by spec:model arms
  std::string head_path;     // a drafter head (eagle3, dflash): required by arms drafting with it
  std::string prompts_path;  // JSONL with "id" and "prompt" per line
  size_t max_prompts = 0;    // 0: all
  std::vector<ArmSpec> arms;
  int n_gen = 128;
  int repeats = 5;
  int warmup = 1;
  int threads = 0;    // 0: hardware threads
  int64_t n_ctx = 0;  // 0: longest prompt + n_gen + the largest K
  int64_t ubatch = 512;
  cache::CacheTypes cache_types;    // of the target's and the drafters' caches
  sampling::SamplerConfig sampler;  // temperature 0 = greedy arms
  spec::SampledRule sampled_rule = spec::SampledRule::kBlock;  // of every sampled spec arm
  uint64_t seed = 1;
  std::string policy_log_path;  // spec:auto arms write one JSON line per cycle here (optional)
};

// Called after each sample: samples done, total, and what just ran.
using BenchProgress = std::function<void(size_t done, size_t total, const std::string& what)>;

// Runs the benchmark; InvalidArgument for a bad configuration (missing -md for a model arm, no
// AR arm, an empty prompts file, ...).
nlohmann::json run_benchmark(const BenchRunConfig& config, const BenchProgress& progress = {});

}  // namespace augur::bench
