// kernels/peak_int8.h on every ISA path this CPU runs: where the path has VNNI, the chains run (and
// count) whole trips of acc += 64 products 3 x -2 per lane and the measurement gives one positive
// figure per sample; elsewhere it is refused by name. Behaviour only: no throughput thresholds.
#include "kernels/peak_int8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/error.h"

namespace augur::kernels {
namespace {

class PeakInt8Test : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { set_isa_for_testing(GetParam()); }
  void TearDown() override { set_isa_for_testing(select_isa(nullptr)); }
};

// Chain i starts at i in each of its 16 lanes and gains 4 x (3 x -2) = -24 per lane per trip.
TEST_P(PeakInt8Test, ChainsRunWholeTripsFromTheirOwnSeeds) {
  int32_t sink = 0;
  if (!has_int8_peak(GetParam())) {
    EXPECT_THROW(int8_mac_chains(1, &sink), Unsupported);
    return;
  }
  const int64_t per_trip = int8_mac_chains(1, &sink);
  ASSERT_EQ(per_trip, 12 * 64);
  EXPECT_EQ(sink, 16 * 66 - 12 * 16 * 24);  // seeds 0..11 in 16 lanes, one trip
  const int64_t ran = int8_mac_chains(1000 * per_trip + 1, &sink);
  EXPECT_EQ(ran, 1001 * per_trip);
  EXPECT_EQ(sink, 16 * 66 - 1001 * 12 * 16 * 24);
}

TEST_P(PeakInt8Test, MeasurementGivesOnePositiveFigurePerSampleOnEveryThreadCount) {
  if (!has_int8_peak(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " has no VNNI";
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    const auto gop_s = measure_peak_int8_gop_s(pool, 3, 1 << 20);
    ASSERT_EQ(gop_s.size(), 3u) << threads << " threads";
    for (double g : gop_s) EXPECT_TRUE(std::isfinite(g) && g > 0) << g;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, PeakInt8Test, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(isa_name(info.param));
                         });

}  // namespace
}  // namespace augur::kernels
