// The session loop of cache-state tests for drafters that read the target (EAGLE-3, DFlash):
// real generations with the drafter behind a FeatureTamperer, the cache compared after every
// cycle by a drafter-specific check.
#pragma once

#include <cstdio>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "engine/generator.h"
#include "model/evaluator.h"
#include "support/feature_tamperer.h"
#include "support/sanitized_build.h"
#include "support/spec_setup.h"

namespace augur::testing {

// The target's features at `taps` for every row of `tokens` (positions 0..), from a fresh cache:
// [rows, taps, n_embd].
inline std::vector<float> target_features(const model::Model& target, std::span<const int32_t> taps,
                                          std::span<const int32_t> tokens,
                                          kernels::ThreadPool& pool) {
  const auto rows = static_cast<int64_t>(tokens.size());
  const auto width = static_cast<int64_t>(taps.size()) * target.hparams().n_embd;
  cache::ModelCache cache(target, {.capacity = rows, .max_batch = rows});
  model::Evaluator eval(target, pool, rows, rows);
  std::vector<int32_t> positions(static_cast<size_t>(rows));
  std::iota(positions.begin(), positions.end(), 0);
  std::vector<float> features(static_cast<size_t>(rows * width));
  model::RowExtras capture;
  capture.capture_layers = taps;
  capture.on_features = [&](int64_t first, int64_t n, const float* f) {
    std::copy(f, f + n * width, features.begin() + first * width);
  };
  eval.forward(tokens, positions, {}, cache.memory(), nullptr, -1, capture);
  return features;
}

struct Outcome {
  int64_t cycles = 0, drafted = 0, accepted = 0;
  std::string first_difference;  // with the cycle it was seen after
};

// Runs greedy or sampled sessions (k in {1, 4, 8}, two zoo prompts each, 48 tokens (24 under a
// sanitizer), prefix reuse
// between them) with `inner` behind a FeatureTamperer planting `defect`, and records the first
// difference `difference()` reports after any cycle (empty: the cache is right).
inline Outcome run_cache_state(const model::Model& target, kernels::ThreadPool& pool,
                               spec::DraftSource& inner, Defect defect, float temperature,
                               const std::function<std::string()>& difference) {
  const auto prompts = zoo_prompts(target, 2);
  const int64_t n_ctx = 512, ubatch = 16;
  FeatureTamperer drafter(inner, defect);
  engine::Generator gen(target, pool, n_ctx, ubatch);
  const auto sampler = make_sampler(target, temperature);
  sampling::SeededRng rng(5);
  Outcome out;
  int64_t cycle = 0;
  for (const int k : {1, 4, 8}) {
    for (const auto& prompt : prompts) {
      engine::GenerateOptions opt;
      opt.n_predict = full_or_sanitized(48, 24);
      opt.ignore_eos = true;
      opt.drafter = &drafter;
      opt.draft_max = k;
      opt.on_cycle = [&](const engine::CycleInfo&) {
        ++cycle;
        if (!out.first_difference.empty()) return;
        const std::string d = difference();
        if (!d.empty()) {
          out.first_difference =
              "after cycle " + std::to_string(cycle) + " (k=" + std::to_string(k) + "): " + d;
        }
      };
      drafter.start_run();
      const auto r = gen.generate(prompt, sampler, rng, opt, kNeverEog);
      out.cycles += r.stats.spec.cycles;
      out.drafted += r.stats.spec.drafted;
      out.accepted += r.stats.spec.accepted;
    }
  }
  std::printf("[ %-8s ] T=%.1f defect %d: %lld cycles, %lld drafted, %lld accepted%s%s\n",
              inner.name().c_str(), temperature, static_cast<int>(defect),
              static_cast<long long>(out.cycles), static_cast<long long>(out.drafted),
              static_cast<long long>(out.accepted), out.first_difference.empty() ? "" : "; ",
              out.first_difference.c_str());
  return out;
}

}  // namespace augur::testing
