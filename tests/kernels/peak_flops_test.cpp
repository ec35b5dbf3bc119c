// kernels/peak_flops.h on every ISA path this CPU runs: the chains run (and count) whole trips of
// the recurrence acc = acc * 0.5 + 1 on every lane, and the measurement gives one positive figure
// per sample. Behaviour only: no throughput thresholds.
#include "kernels/peak_flops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/isa.h"

namespace augur::kernels {
namespace {

class PeakFlopsTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { set_isa_for_testing(GetParam()); }
  void TearDown() override { set_isa_for_testing(select_isa(nullptr)); }
};

// The 12 chains start at 0..11 (identical chains would be merged by the compiler into one), so
// one trip leaves chain i at i * 0.5 + 1 on each of its per_trip / 12 lanes: 45 per lane set.
TEST_P(PeakFlopsTest, OneTripStepsEveryChainOnceFromItsOwnSeed) {
  float sink = -1;
  const int64_t per_trip = fma_chains(1, &sink);
  ASSERT_EQ(per_trip % 12, 0);
  EXPECT_EQ(sink, 45.0f * static_cast<float>(per_trip / 12));
}

TEST_P(PeakFlopsTest, RunsWholeTripsCoveringTheRequestAndEveryLaneReachesTwo) {
  float sink = 0;
  const int64_t per_trip = fma_chains(1, &sink);
  const int64_t requested = 1000 * per_trip + 1;  // one FMA past 1000 trips: a 1001st trip
  const int64_t ran = fma_chains(requested, &sink);
  EXPECT_EQ(ran, 1001 * per_trip);
  // After 25 steps acc = acc * 0.5 + 1 rounds to its fixed point 2 exactly, on every lane.
  EXPECT_EQ(sink, 2.0f * static_cast<float>(per_trip));
}

TEST_P(PeakFlopsTest, MeasurementGivesOnePositiveFigurePerSampleOnEveryThreadCount) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    const auto gflop_s = measure_peak_gflop_s(pool, 3, 1 << 20);
    ASSERT_EQ(gflop_s.size(), 3u) << threads << " threads";
    for (double g : gflop_s) EXPECT_TRUE(std::isfinite(g) && g > 0) << g;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, PeakFlopsTest, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(isa_name(info.param));
                         });

}  // namespace
}  // namespace augur::kernels
