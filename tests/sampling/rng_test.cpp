#include "sampling/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

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

}  // namespace
}  // namespace augur::sampling
