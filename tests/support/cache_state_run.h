// The session loop of cache-state tests for drafters that read the target (EAGLE-3, MTP, DFlash):
// real generations with the drafter behind a FeatureTamperer, its cache kept after every cycle and
// compared with one built from scratch for the tokens committed by then.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "engine/generator.h"
#include "model/evaluator.h"
#include "support/cache_compare.h"
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

// Every planted defect, and a piece of the message of the check that must catch it ("": any).
// The feature defects break the rows, which the comparison with a scratch cache sees; the other
// two leave the rows right, so only the row bound or the token check can see them.
struct PlantedDefect {
  Defect defect;
  const char* caught_by;
};
inline constexpr PlantedDefect kPlantedDefects[] = {
    {Defect::kNextRowFeatures, ""},
    {Defect::kStaleVerifyFeatures, ""},
    {Defect::kPromptOneLate, ""},
    {Defect::kContextOneShort, " covered before the cycle"},
    {Defect::kClaimsWrongTokens, "its tokens are not the committed ones"},
};

struct Outcome {
  int64_t cycles = 0, drafted = 0, accepted = 0;
  std::string first_difference;  // with the cycle it was seen after
};

// What the session loop needs from one kind of drafter.
struct CacheStateProbe {
  // The drafter's cache now, and the tokens it says its rows are for.
  std::function<model::Memory&()> memory;
  std::function<std::vector<int32_t>()> claimed_tokens;
  // What it must say when it holds `rows` rows after a cycle that committed `committed`. Rows
  // come only from tokens the target has run on, so never the last committed one (the carry);
  // the rows of the last cycle's accepted tokens may wait for the next drafting forward.
  std::function<std::vector<int32_t>(std::span<const int32_t> committed, int64_t rows)>
      expected_tokens;
  // A cache built from scratch for the rows of `committed` (all but the carry): one target forward
  // over them with feature capture, then one drafter forward over all their rows.
  std::function<std::unique_ptr<cache::ModelCache>(std::span<const int32_t> committed)> reference;
};

// The drafter's cache after one cycle, kept until the run's reference exists.
struct CycleSnapshot {
  int64_t cycle = 0;
  int k = 0;
  std::vector<int32_t> committed;
  FrozenMemory memory;
};

inline std::string after_cycle(const CycleSnapshot& s, const std::string& what) {
  return "after cycle " + std::to_string(s.cycle) + " (k=" + std::to_string(s.k) + "): " + what;
}

// The first difference between a run's snapshots and caches built from scratch: every snapshot
// against the prefix of one reference for the run's last committed tokens (a fresh forward per
// cycle would make the test quadratic in the run's length), and the middle one also against one
// built for exactly its rows, which checks that prefix argument on every run.
inline std::string first_run_difference(std::vector<CycleSnapshot>& snapshots,
                                        const CacheStateProbe& probe) {
  if (snapshots.empty()) return "";
  const std::vector<int32_t>& last = snapshots.back().committed;
  const auto full = probe.reference(last);
  for (CycleSnapshot& s : snapshots) {
    if (!std::equal(s.committed.begin(), s.committed.end(), last.begin())) {
      return after_cycle(s, "committed tokens are not a prefix of the run's");
    }
    if (const std::string d = first_prefix_difference(s.memory, full->memory(), s.memory.n_rows());
        !d.empty()) {
      return after_cycle(s, d);
    }
  }
  CycleSnapshot& middle = snapshots[snapshots.size() / 2];
  const int64_t rows = middle.memory.n_rows();
  const auto own = probe.reference(
      std::span<const int32_t>(middle.committed).first(static_cast<size_t>(rows) + 1));
  if (const std::string d = first_cache_difference(middle.memory, own->memory(), rows);
      !d.empty()) {
    return after_cycle(middle, "against its own reference: " + d);
  }
  return "";
}

// Runs greedy or sampled sessions (k in {1, 4, 8}, two zoo prompts each, 48 tokens (24 under a
// sanitizer), prefix reuse between them) with the drafter behind a FeatureTamperer planting
// `defect`, and records the first cycle after which the drafter's cache is not the one built from
// scratch for the committed tokens (empty: it always was).
inline Outcome run_cache_state(const model::Model& target, kernels::ThreadPool& pool,
                               spec::DraftSource& inner, Defect defect, float temperature,
                               CacheStateProbe probe) {
  if (defect == Defect::kClaimsWrongTokens) {
    probe.claimed_tokens = [claimed = probe.claimed_tokens] {
      std::vector<int32_t> tokens = claimed();
      if (!tokens.empty()) tokens.back() ^= 1;
      return tokens;
    };
  }
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
      // Committed tokens the drafter's rows must cover after the next cycle that drafts (its
      // forward takes in the rows of the tokens accepted since): the prompt's before the first
      // cycle (its features come from the prefill), then all but the carry of each cycle's.
      auto covered = static_cast<int64_t>(prompt.size());
      engine::GenerateOptions opt;
      opt.n_predict = full_or_sanitized(48, 24);
      opt.ignore_eos = true;
      opt.drafter = &drafter;
      opt.draft_max = k;
      std::vector<CycleSnapshot> snapshots;
      opt.on_cycle = [&](const engine::CycleInfo& info) {
        ++cycle;
        if (!out.first_difference.empty()) return;
        model::Memory& memory = probe.memory();
        CycleSnapshot s{cycle,
                        k,
                        {info.committed.begin(), info.committed.end()},
                        FrozenMemory(memory, memory.n_rows())};
        const int64_t rows = memory.n_rows();
        const auto committed = static_cast<int64_t>(s.committed.size());
        if ((info.drafted > 0 && rows < covered) || rows >= committed) {
          out.first_difference =
              after_cycle(s, std::to_string(rows) + " rows for " + std::to_string(committed) +
                                 " committed tokens, " + std::to_string(covered) +
                                 " of them covered before the cycle");
        } else if (probe.claimed_tokens() != probe.expected_tokens(s.committed, rows)) {
          out.first_difference = after_cycle(s, "its tokens are not the committed ones");
        } else {
          snapshots.push_back(std::move(s));
        }
        covered = committed - 1;
      };
      drafter.start_run();
      const auto r = gen.generate(prompt, sampler, rng, opt, kNeverEog);
      out.cycles += r.stats.spec.cycles;
      out.drafted += r.stats.spec.drafted;
      out.accepted += r.stats.spec.accepted;
      if (out.first_difference.empty())
        out.first_difference = first_run_difference(snapshots, probe);
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
