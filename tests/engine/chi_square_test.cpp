// The chi-square helper of the speculative statistics test (tests/support/chi_square.h): Q(a, x)
// against closed forms in both of its branches, and each test on samples drawn from the right law
// (passes) and from a planted wrong one (fails).
#include "support/chi_square.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "sampling/rng.h"

namespace augur::testing {
namespace {

// Q(n, x) = e^-x * sum_{k < n} x^k / k! for a whole n (the Poisson tail).
double poisson_q(int n, double x) {
  double term = 1.0;
  double sum = 1.0;
  for (int k = 1; k < n; ++k) {
    term *= x / k;
    sum += term;
  }
  return std::exp(-x) * sum;
}

TEST(ChiSquare, GammaQMatchesClosedFormsInBothBranches) {
  // x < a + 1 takes the series, x >= a + 1 the continued fraction.
  for (double x : {0.01, 0.3, 1.0, 2.5, 7.0, 30.0, 90.0}) {
    EXPECT_NEAR(regularized_gamma_q(1.0, x), std::exp(-x), 1e-13 * std::exp(-x)) << x;
    EXPECT_NEAR(regularized_gamma_q(0.5, x), std::erfc(std::sqrt(x)),
                1e-12 * std::erfc(std::sqrt(x)))
        << x;
    for (int n : {3, 12, 60}) {
      const double want = poisson_q(n, x);
      EXPECT_NEAR(regularized_gamma_q(n, x), want, 1e-12 * want + 1e-14) << n << " " << x;
    }
  }
  EXPECT_EQ(regularized_gamma_q(4.0, 0.0), 1.0);
  EXPECT_THROW(regularized_gamma_q(0.0, 1.0), std::invalid_argument);
}

TEST(ChiSquare, PValueOfTwoDegreesIsExponential) {
  for (double s : {0.0, 1.0, 5.99, 13.8, 40.0}) {
    EXPECT_NEAR(chi_square_p_value(s, 2), std::exp(-s / 2), 1e-13);
  }
  EXPECT_EQ(chi_square_p_value(123.0, 0), 1.0);
}

std::vector<int64_t> draw_counts(const std::vector<double>& law, int n, uint64_t seed) {
  sampling::SeededRng rng(seed);
  const double mass = std::accumulate(law.begin(), law.end(), 0.0);
  std::vector<int64_t> counts(law.size(), 0);
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform() * mass;
    double cdf = 0;
    size_t cat = 0;
    while (cat + 1 < law.size() && (cdf += law[cat]) <= u) ++cat;
    ++counts[cat];
  }
  return counts;
}

// A law with a long tail of small categories, so pooling matters.
std::vector<double> tailed_law() {
  std::vector<double> law = {0.3, 0.2, 0.15, 0.1, 0.08};
  for (int cat = 0; cat < 40; ++cat) law.push_back(0.17 / 40);
  law.push_back(0.0);  // a category outside the support
  return law;
}

TEST(ChiSquare, GoodnessOfFitAcceptsTheTrueLawAndRejectsAShiftedOne) {
  const auto law = tailed_law();
  const auto counts = draw_counts(law, 3000, 11);
  const ChiSquare right = goodness_of_fit(counts, law);
  EXPECT_GT(right.p_value, 1e-3) << right.statistic;
  EXPECT_GE(right.df, 5);
  auto shifted = law;  // 0.06 of mass moved from the top category to the second
  shifted[0] -= 0.06;
  shifted[1] += 0.06;
  EXPECT_LT(goodness_of_fit(counts, shifted).p_value, 1e-3);
}

TEST(ChiSquare, GoodnessOfFitRejectsCountsOutsideTheSupport) {
  std::vector<int64_t> counts = {50, 50, 0, 1};
  const std::vector<double> law = {0.5, 0.5, 0.0, 0.0};
  const ChiSquare r = goodness_of_fit(counts, law);
  EXPECT_EQ(r.p_value, 0.0);
}

TEST(ChiSquare, TwoSampleAcceptsOneLawAndRejectsTwo) {
  const auto law = tailed_law();
  const auto a = draw_counts(law, 2000, 21);
  const auto b = draw_counts(law, 3000, 22);
  const ChiSquare same = two_sample(a, b);
  EXPECT_GT(same.p_value, 1e-3) << same.statistic;
  EXPECT_GE(same.df, 5);
  auto other = law;
  other[2] += 0.04;
  other[4] -= 0.04;
  EXPECT_LT(two_sample(a, draw_counts(other, 3000, 22)).p_value, 1e-3);
}

TEST(ChiSquare, CombineAddsStatisticsAndDegrees) {
  const ChiSquare parts[] = {{3.0, 2, 0}, {5.0, 4, 0}};
  const ChiSquare r = combine(parts);
  EXPECT_EQ(r.statistic, 8.0);
  EXPECT_EQ(r.df, 6);
  EXPECT_NEAR(r.p_value, poisson_q(3, 4.0), 1e-13);  // chi-square(6) tail at 8 = Q(3, 4)
}

}  // namespace
}  // namespace augur::testing
