// After every speculative cycle a DFlash drafter's cache holds exactly the rows injected from the
// target's features of the committed tokens the target has run on (all but the carry), and
// nothing of the draft blocks: compared byte for byte with a cache built from scratch — one
// target forward over those tokens with feature capture, then one injection of all their rows —
// after each cycle of greedy and sampled runs at k in {1, 4, 8}, prefix reuse included.
// Planted defects (support/feature_tamperer.h: next-row features, a verify's features replaced
// by the previous verify's stale ones, the prompt's one position late, a context one token short,
// a wrong list of the rows' tokens) must be caught, each by the check meant for it.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "model/evaluator.h"
#include "model/heads/dflash.h"
#include "support/cache_compare.h"
#include "support/cache_state_run.h"
#include "support/requested_isa.h"
#include "support/spec_setup.h"

namespace augur::engine {
namespace {

using testing::Defect;
using testing::Outcome;

// The cache built from scratch for the rows of `committed` (all but the carry): their features
// from one target forward, injected in one drafter forward.
testing::CacheStateProbe probe(const model::Model& target, const model::heads::DFlash& head,
                               spec::DFlashDrafter& drafter, kernels::ThreadPool& pool) {
  testing::CacheStateProbe p;
  p.memory = [&drafter]() -> model::Memory& {
    return const_cast<cache::ModelCache&>(drafter.cache()).memory();
  };
  p.claimed_tokens = [&drafter] { return drafter.row_tokens(); };
  p.expected_tokens = [](std::span<const int32_t> committed, int64_t rows) {
    const auto held = committed.first(static_cast<size_t>(rows));
    return std::vector<int32_t>(held.begin(), held.end());
  };
  p.reference = [&](std::span<const int32_t> committed) {
    const std::span<const int32_t> tokens = committed.first(committed.size() - 1);
    const auto rows = static_cast<int64_t>(tokens.size());
    const std::vector<float> features =
        testing::target_features(target, head.target_layers(), tokens, pool);
    std::vector<int32_t> positions(static_cast<size_t>(rows));
    std::iota(positions.begin(), positions.end(), 0);
    auto want = std::make_unique<cache::ModelCache>(
        head, cache::CacheOptions{.capacity = rows, .max_batch = rows});
    model::Evaluator head_eval(head, pool, rows, rows);
    head_eval.forward(tokens, positions, {}, want->memory(), nullptr, -1,
                      {.hidden_in = features.data()});
    want->commit(rows);
    return want;
  };
  return p;
}

Outcome run(Defect defect, float temperature) {
  auto target = model::load_model(testing::models_dir() / "zoo-target-f16.gguf");
  kernels::ThreadPool pool(2);
  auto holder = testing::make_test_drafter(
      "dflash:" + (testing::source_dir() / "models" / "zoo-target-dflash-f16.gguf").string(),
      *target, pool, 512, 16);
  auto& inner = const_cast<spec::DFlashDrafter&>(*holder.dflash_drafter);
  const auto& head = static_cast<const model::heads::DFlash&>(*holder.head);
  return testing::run_cache_state(*target, pool, inner, defect, temperature,
                                  probe(*target, head, inner, pool));
}

class DFlashCacheState : public ::testing::Test {
 protected:
  void SetUp() override { AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE(); }
};

TEST_F(DFlashCacheState, HoldsExactlyTheCommittedRowsAfterEveryCycle) {
  for (const float temperature : {0.0f, 0.8f}) {
    const Outcome o = run(Defect::kNone, temperature);
    EXPECT_EQ(o.first_difference, "") << "T=" << temperature;
    EXPECT_GT(o.accepted, 0) << "T=" << temperature;
    EXPECT_LT(o.accepted, o.drafted) << "T=" << temperature;
  }
}

TEST_F(DFlashCacheState, PlantedDefectsAreCaught) {
  for (const auto& [defect, caught_by] : testing::kPlantedDefects) {
    const Outcome o = run(defect, 0.0f);
    EXPECT_NE(o.first_difference, "") << "defect " << static_cast<int>(defect) << " went unnoticed";
    EXPECT_NE(o.first_difference.find(caught_by), std::string::npos)
        << "defect " << static_cast<int>(defect) << " was not caught by the check meant for it";
  }
}

}  // namespace
}  // namespace augur::engine
