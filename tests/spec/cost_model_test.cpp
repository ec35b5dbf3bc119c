// The policy's cost model: calibration, interpolation and extrapolation of T_V(m), online
// refinement with drift reaching unmeasured rows, and draft cost from steady cycles only.
#include "spec/cost_model.h"

#include <gtest/gtest.h>

#include <vector>

namespace augur::spec {
namespace {

TEST(CostModel, NothingKnownPredictsZeroUntilCalibrated) {
  CostModel costs(9, 2);
  EXPECT_FALSE(costs.verify_known());
  EXPECT_EQ(costs.verify_seconds(1), 0.0);
  costs.calibrate_verify(std::vector<double>{0.010});
  EXPECT_TRUE(costs.verify_known());
  EXPECT_DOUBLE_EQ(costs.verify_seconds(1), 0.010);
}

TEST(CostModel, InterpolatesBetweenAndExtrapolatesBeyondMeasuredRows) {
  CostModel costs(9, 1);
  // Measured m = 1, 2, 4 (0 = not measured).
  costs.calibrate_verify(std::vector<double>{0.010, 0.012, 0, 0.016});
  EXPECT_DOUBLE_EQ(costs.verify_seconds(3), 0.014);
  // Past m = 4: the slope of the last two measured points (0.002 per row).
  EXPECT_NEAR(costs.verify_seconds(6), 0.020, 1e-12);
  EXPECT_NEAR(costs.verify_seconds(9), 0.026, 1e-12);
  // Rows past the model's range are clamped to its largest.
  EXPECT_NEAR(costs.verify_seconds(20), costs.verify_seconds(9), 1e-15);
}

TEST(CostModel, ObservationsMoveTheirRowAndDriftReachesTheOthers) {
  CostModel costs(5, 1);
  costs.calibrate_verify(std::vector<double>{0.010, 0.011, 0.012, 0.013, 0.014});
  // The machine got 50 % slower: only m = 2 is observed.
  for (int i = 0; i < 200; ++i) costs.observe_verify(2, 0.0165);
  EXPECT_NEAR(costs.verify_seconds(2), 0.0165, 1e-4);
  // Every other row followed part of the way (a quarter of each surprise: about +13 % here), and
  // a model without drift would not have moved at all.
  EXPECT_GT(costs.verify_seconds(1), 0.0108);
  EXPECT_LT(costs.verify_seconds(1), 0.015);
  EXPECT_GT(costs.verify_seconds(5), 0.0151);
  EXPECT_LT(costs.verify_seconds(5), 0.021);
}

TEST(CostModel, DraftCostPerTokenComesFromSteadyCyclesWhenThereAreAny) {
  CostModel costs(9, 2);
  EXPECT_EQ(costs.draft_seconds(0, 4), 0.0) << "never timed: free until measured";
  // A catch-up cycle (not steady): 3 tokens in 0.030 s.
  costs.observe_draft(0, 3, 0.030, /*steady=*/false);
  EXPECT_NEAR(costs.draft_seconds(0, 2), 0.020, 1e-12);
  // Steady cycles: 1 ms per token; the catch-up no longer counts.
  costs.observe_draft(0, 4, 0.004, /*steady=*/true);
  EXPECT_NEAR(costs.draft_seconds(0, 2), 0.002, 1e-12);
  EXPECT_EQ(costs.draft_seconds(1, 2), 0.0) << "sources are kept apart";
  EXPECT_EQ(costs.draft_seconds(0, 0), 0.0);
}

TEST(CostModel, OtherCostScalesWithRows) {
  CostModel costs(9, 1);
  costs.observe_other(4, 0.0004);
  EXPECT_NEAR(costs.other_seconds(1), 0.0001, 1e-12);
  EXPECT_NEAR(costs.other_seconds(8), 0.0008, 1e-12);
}

}  // namespace
}  // namespace augur::spec
