#include "sampling/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "sampling/scripted_rng.h"

namespace augur::sampling {
namespace {

TEST(SeededRng, UniformIsTop53BitsOfMt19937_64) {
  SeededRng rng(1234);
  std::mt19937_64 reference(1234);
  for (int draw = 0; draw < 1000; ++draw) {
    const double expected = std::ldexp(static_cast<double>(reference() >> 11), -53);
    ASSERT_EQ(rng.uniform(), expected) << "draw " << draw;
  }
}

TEST(SeededRng, SameSeedSameStreamOtherSeedOtherStream) {
  SeededRng a(7), b(7), c(8);
  int n_equal_to_other_seed = 0;
  for (int draw = 0; draw < 100; ++draw) {
    const double value = a.uniform();
    EXPECT_EQ(value, b.uniform());
    if (value == c.uniform()) ++n_equal_to_other_seed;
  }
  EXPECT_EQ(n_equal_to_other_seed, 0);
}

TEST(SeededRng, StaysInHalfOpenUnitIntervalWithMeanOneHalf) {
  SeededRng rng(42);
  constexpr int kDraws = 100000;
  double sum = 0.0;
  for (int draw = 0; draw < kDraws; ++draw) {
    const double value = rng.uniform();
    ASSERT_GE(value, 0.0);
    ASSERT_LT(value, 1.0);
    sum += value;
  }
  // Standard error of the mean is sqrt(1/12 / 1e5) ~ 0.0009; 0.005 is > 5 sigma.
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);
}

// The default choices of an Rng spend one uniform each: bernoulli is u < prob, categorical is
// the inverse CDF (on double weights here; draw_test covers float rows through sampling::draw).
TEST(Rng, BernoulliIsUniformStrictlyBelowProbOneUniformEach) {
  struct Case {
    double prob, u;
    bool accepted;
  };
  const double below_one = std::nextafter(1.0, 0.0);
  for (const Case& c : {Case{0.5, 0.4999, true}, Case{0.5, 0.5, false}, Case{1.0, below_one, true},
                        Case{0.0, 0.0, false}, Case{0.25, 0.0, true}}) {
    testing::ScriptedRng rng({c.u});
    EXPECT_EQ(rng.bernoulli(c.prob), c.accepted) << "prob " << c.prob << " u " << c.u;
    EXPECT_EQ(rng.n_used(), 1u);
  }
}

TEST(Rng, CategoricalIsTheInverseCdfAndSkipsZeroWeights) {
  const std::vector<double> weights = {0.0, 2.0, 0.0, 1.0, 1.0, 0.0};
  const double below_one = std::nextafter(1.0, 0.0);
  const std::vector<std::pair<double, int32_t>> cases = {{0.0, 1},    {0.4999, 1}, {0.5, 3},
                                                         {0.7499, 3}, {0.75, 4},   {below_one, 4}};
  for (const auto& [u, expected] : cases) {
    testing::ScriptedRng rng({u});
    EXPECT_EQ(rng.categorical(std::span<const double>(weights)), expected) << "u = " << u;
    EXPECT_EQ(rng.n_used(), 1u);
  }
}

}  // namespace
}  // namespace augur::sampling
