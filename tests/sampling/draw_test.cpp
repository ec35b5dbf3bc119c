// argmax() and draw(): the tie rule, the inverse-CDF definition and its statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "sampling/sampler.h"
#include "scripted_rng.h"

namespace augur::sampling {
namespace {

using testing::ScriptedRng;

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Argmax, LowestIndexWinsATie) {
  const std::vector<float> values = {1.0f, 3.0f, 2.0f, 3.0f, 3.0f};
  EXPECT_EQ(argmax(values), 1);
}

TEST(Argmax, HandlesNegativesAndInfinities) {
  EXPECT_EQ(argmax(std::vector<float>{-5.0f, -2.0f, -3.0f}), 1);
  EXPECT_EQ(argmax(std::vector<float>{-kInf, -kInf, -7.0f}), 2);
  EXPECT_EQ(argmax(std::vector<float>{-kInf, -kInf}), 0);
  EXPECT_EQ(argmax(std::vector<float>{4.0f}), 0);
}

// Weights {0, 2, 0, 1, 1} (sum 4): the CDF steps are 0 | 2 | 2 | 3 | 4, so u*4 in [0, 2) picks
// 1, [2, 3) picks 3 and [3, 4) picks 4. A boundary belongs to the next positive entry.
TEST(Draw, IsTheInverseCdfOfUnnormalisedWeights) {
  const std::vector<float> weights = {0.0f, 2.0f, 0.0f, 1.0f, 1.0f};
  const std::vector<std::pair<double, int32_t>> cases = {
      {0.0, 1}, {0.25, 1}, {0.4999, 1}, {0.5, 3}, {0.6, 3}, {0.7499, 3}, {0.75, 4}, {0.999, 4}};
  for (const auto& [u, expected] : cases) {
    ScriptedRng rng({u});
    EXPECT_EQ(draw(weights, rng), expected) << "u = " << u;
    EXPECT_EQ(rng.n_used(), 1u);
  }
}

TEST(Draw, NeverReturnsAZeroProbabilityIndexEvenAtTheEnds) {
  // u = 0 with a leading zero, and u just below 1 with trailing zeros.
  const std::vector<float> weights = {0.0f, 0.0f, 0.5f, 0.0f, 0.5f, 0.0f, 0.0f};
  ScriptedRng low({0.0});
  EXPECT_EQ(draw(weights, low), 2);
  ScriptedRng high({std::nextafter(1.0, 0.0)});
  EXPECT_EQ(draw(weights, high), 4);

  // Tiny entries next to zeros, many seeded draws: only positive entries ever come back.
  const std::vector<float> sparse = {0.0f, 1e-30f, 0.0f, 1.0f, 0.0f, 1e-7f, 0.0f};
  SeededRng rng(99);
  for (int trial = 0; trial < 20000; ++trial) {
    const int32_t token = draw(sparse, rng);
    ASSERT_GT(sparse[token], 0.0f) << "trial " << trial << " drew " << token;
  }
}

// 200k seeded draws from {.1, 0, .2, .3, 0, .4}: Pearson's chi-square over the 4 positive cells
// (3 degrees of freedom) must stay below 16.27, the 0.999 quantile. The seed is fixed, so the
// outcome is deterministic; a biased or shifted CDF gives values in the thousands.
TEST(Draw, FrequenciesMatchProbabilitiesByChiSquare) {
  const std::vector<float> probs = {0.1f, 0.0f, 0.2f, 0.3f, 0.0f, 0.4f};
  constexpr int kDraws = 200000;
  std::vector<int> counts(probs.size(), 0);
  SeededRng rng(0xA06u);
  for (int trial = 0; trial < kDraws; ++trial) ++counts[draw(probs, rng)];

  double chi_square = 0.0;
  for (size_t token = 0; token < probs.size(); ++token) {
    if (probs[token] == 0.0f) {
      EXPECT_EQ(counts[token], 0) << "token " << token;
      continue;
    }
    const double expected = kDraws * static_cast<double>(probs[token]);
    chi_square += (counts[token] - expected) * (counts[token] - expected) / expected;
  }
  EXPECT_LT(chi_square, 16.27);
}

TEST(Draw, SameSeedGivesTheSameTokens) {
  const std::vector<float> probs = {0.05f, 0.15f, 0.3f, 0.2f, 0.3f};
  SeededRng first(2024), second(2024);
  std::vector<int32_t> tokens_first, tokens_second;
  for (int trial = 0; trial < 1000; ++trial) {
    tokens_first.push_back(draw(probs, first));
    tokens_second.push_back(draw(probs, second));
  }
  EXPECT_EQ(tokens_first, tokens_second);
}

using DrawDeathTest = ::testing::Test;

TEST_F(DrawDeathTest, RejectsNegativeNanOrAllZeroWeights) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SeededRng rng(1);
  EXPECT_DEATH(draw(std::vector<float>{0.5f, -0.1f}, rng), "non-negative");
  EXPECT_DEATH(draw(std::vector<float>{0.5f, std::nanf("")}, rng), "non-negative");
  EXPECT_DEATH(draw(std::vector<float>{0.0f, 0.0f}, rng), "positive");
}

}  // namespace
}  // namespace augur::sampling
