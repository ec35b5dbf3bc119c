// `augur bench verify-curve`: T_V(M), the time of one target forward over M rows on top of a
// context of a given length, for M = 1..max_m, repeated (median and spread), and T_V(M)/T_V(1):
// the curve the draft policy rests on. Also the per-token cost of each drafter at each context.
// Every timed forward is rolled back (commit(0)), so each repeat sees the same cache.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace augur::bench {

struct VerifyCurveConfig {
  std::string target_path;
  std::string draft_path;      // optional: also time this draft model
  std::vector<int> layerskip;  // optional: also time these layer-skip depths
  int max_m = 16;
  std::vector<int64_t> contexts = {256, 1024};
  int repeats = 9;
  int warmup = 2;
  int threads = 0;
  int draft_k = 8;  // tokens per timed drafter proposal
};

using CurveProgress = std::function<void(size_t done, size_t total, const std::string& what)>;

nlohmann::json run_verify_curve(const VerifyCurveConfig& config,
                                const CurveProgress& progress = {});

}  // namespace augur::bench
