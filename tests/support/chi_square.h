// Pearson chi-square tests for distributional checks, from scratch (no statistics dependency):
// the regularized upper incomplete gamma Q(a, x) gives the chi-square survival function, and two
// tests use it: goodness of fit of counts against an exact law, and homogeneity of two samples.
//
// Bins: a test needs an expected count >= kMinExpected in every bin for the chi-square
// approximation to hold. Bins below it are pooled into one "rest" bin; if the rest is still
// below, it is merged into the smallest kept bin. Pooling could hide a count in a category the
// law gives probability exactly 0, so goodness_of_fit rejects that outright (statistic +inf,
// p = 0): an impossible event was observed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

namespace augur::testing {

inline constexpr double kMinExpected = 5.0;

struct ChiSquare {
  double statistic = 0;
  int df = 0;
  double p_value = 1;  // P(X >= statistic) for X ~ chi-square(df); 1 when df = 0
};

// Q(a, x) = Gamma(a, x) / Gamma(a) for a > 0, x >= 0: a power series for P = 1 - Q when
// x < a + 1 (where it converges fast), else Legendre's continued fraction for Q evaluated with
// the modified Lentz method (Numerical Recipes, gammq). Relative accuracy ~1e-13 in either branch
// for the arguments tests use (a up to a few hundred).
inline double regularized_gamma_q(double a, double x) {
  if (!(a > 0) || !(x >= 0))
    throw std::invalid_argument("regularized_gamma_q: needs a > 0, x >= 0");
  if (x == 0) return 1.0;
  constexpr double kEps = 1e-15;
  constexpr double kTiny = 1e-300;
  constexpr int kMaxIter = 100000;
  const double log_prefactor = -x + a * std::log(x) - std::lgamma(a);  // log(x^a e^-x / Gamma(a))
  if (x < a + 1) {
    double term = 1.0 / a;
    double sum = term;
    for (int n = 1; n < kMaxIter; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * kEps) return 1.0 - sum * std::exp(log_prefactor);
    }
  } else {
    double b = x + 1.0 - a;
    double c = 1.0 / kTiny;
    double d = 1.0 / b;
    double h = d;
    for (int i = 1; i < kMaxIter; ++i) {
      const double an = -i * (i - a);
      b += 2.0;
      d = an * d + b;
      if (std::fabs(d) < kTiny) d = kTiny;
      c = b + an / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      d = 1.0 / d;
      const double delta = d * c;
      h *= delta;
      if (std::fabs(delta - 1.0) < kEps) return std::exp(log_prefactor) * h;
    }
  }
  throw std::runtime_error("regularized_gamma_q: no convergence");
}

// P(X >= statistic) for X ~ chi-square(df); 1 for df = 0 (no degrees of freedom, no evidence).
inline double chi_square_p_value(double statistic, int df) {
  if (df <= 0) return 1.0;
  return regularized_gamma_q(0.5 * df, 0.5 * std::max(statistic, 0.0));
}

namespace chi_square_detail {

// Groups category indices into bins whose `expected` (per category, >= 0) sums are all
// >= kMinExpected, as described at the top. Returns bin id per category ([n]) and the bin count.
inline int pool_bins(std::span<const double> expected, std::vector<int>& bin_of) {
  const size_t n = expected.size();
  bin_of.assign(n, -1);
  int n_bins = 0;
  double rest = 0;
  int smallest = -1;
  double smallest_expected = 0;
  for (size_t cat = 0; cat < n; ++cat) {
    if (expected[cat] >= kMinExpected) {
      bin_of[cat] = n_bins;
      if (smallest < 0 || expected[cat] < smallest_expected) {
        smallest = n_bins;
        smallest_expected = expected[cat];
      }
      ++n_bins;
    } else {
      rest += expected[cat];
    }
  }
  int rest_bin;
  if (rest >= kMinExpected || smallest < 0) {
    rest_bin = n_bins++;
  } else {
    rest_bin = smallest;
  }
  for (size_t cat = 0; cat < n; ++cat) {
    if (bin_of[cat] < 0) bin_of[cat] = rest_bin;
  }
  return n_bins;
}

}  // namespace chi_square_detail

// Goodness of fit of category counts to a law. observed: [n] counts; probs: [n] >= 0 with a
// positive sum (normalised here). df = bins - 1 after pooling.
inline ChiSquare goodness_of_fit(std::span<const int64_t> observed,  // [n]
                                 std::span<const double> probs) {    // [n]
  if (observed.size() != probs.size()) throw std::invalid_argument("goodness_of_fit: sizes differ");
  const auto total =
      static_cast<double>(std::accumulate(observed.begin(), observed.end(), int64_t{0}));
  const double mass = std::accumulate(probs.begin(), probs.end(), 0.0);
  if (!(mass > 0)) throw std::invalid_argument("goodness_of_fit: law has no mass");
  std::vector<double> expected(probs.size());
  for (size_t cat = 0; cat < probs.size(); ++cat) expected[cat] = total * probs[cat] / mass;
  std::vector<int> bin_of;
  const int n_bins = chi_square_detail::pool_bins(expected, bin_of);
  std::vector<double> bin_observed(static_cast<size_t>(n_bins), 0.0);
  std::vector<double> bin_expected(static_cast<size_t>(n_bins), 0.0);
  for (size_t cat = 0; cat < probs.size(); ++cat) {
    bin_observed[static_cast<size_t>(bin_of[cat])] += static_cast<double>(observed[cat]);
    bin_expected[static_cast<size_t>(bin_of[cat])] += expected[cat];
  }
  ChiSquare r;
  r.df = n_bins - 1;
  for (size_t cat = 0; cat < probs.size(); ++cat) {
    if (observed[cat] > 0 && probs[cat] <= 0) {
      r.statistic = std::numeric_limits<double>::infinity();
      r.p_value = 0.0;
      return r;
    }
  }
  for (int bin = 0; bin < n_bins; ++bin) {
    const double e = bin_expected[static_cast<size_t>(bin)];
    const double d = bin_observed[static_cast<size_t>(bin)] - e;
    if (e > 0) r.statistic += d * d / e;
  }
  r.p_value = chi_square_p_value(r.statistic, r.df);
  return r;
}

// Homogeneity of two samples over the same categories: were `a` and `b` ([n] counts each)
// drawn from one law? Categories are pooled on the smaller of their two expected counts under
// the pooled law; df = bins - 1.
inline ChiSquare two_sample(std::span<const int64_t> a,    // [n]
                            std::span<const int64_t> b) {  // [n]
  if (a.size() != b.size()) throw std::invalid_argument("two_sample: sizes differ");
  const auto n_a = static_cast<double>(std::accumulate(a.begin(), a.end(), int64_t{0}));
  const auto n_b = static_cast<double>(std::accumulate(b.begin(), b.end(), int64_t{0}));
  if (!(n_a > 0 && n_b > 0)) throw std::invalid_argument("two_sample: an empty sample");
  const double smaller_share = std::min(n_a, n_b) / (n_a + n_b);
  std::vector<double> expected_min(a.size());
  for (size_t cat = 0; cat < a.size(); ++cat) {
    expected_min[cat] = static_cast<double>(a[cat] + b[cat]) * smaller_share;
  }
  std::vector<int> bin_of;
  const int n_bins = chi_square_detail::pool_bins(expected_min, bin_of);
  std::vector<double> bin_a(static_cast<size_t>(n_bins), 0.0);
  std::vector<double> bin_b(static_cast<size_t>(n_bins), 0.0);
  for (size_t cat = 0; cat < a.size(); ++cat) {
    bin_a[static_cast<size_t>(bin_of[cat])] += static_cast<double>(a[cat]);
    bin_b[static_cast<size_t>(bin_of[cat])] += static_cast<double>(b[cat]);
  }
  ChiSquare r;
  int used_bins = 0;
  for (int bin = 0; bin < n_bins; ++bin) {
    const double both = bin_a[static_cast<size_t>(bin)] + bin_b[static_cast<size_t>(bin)];
    if (both == 0) continue;  // a pooled rest bin nobody fell into
    ++used_bins;
    const double e_a = both * n_a / (n_a + n_b);
    const double e_b = both * n_b / (n_a + n_b);
    const double d_a = bin_a[static_cast<size_t>(bin)] - e_a;
    const double d_b = bin_b[static_cast<size_t>(bin)] - e_b;
    r.statistic += d_a * d_a / e_a + d_b * d_b / e_b;
  }
  r.df = std::max(used_bins - 1, 0);
  r.p_value = chi_square_p_value(r.statistic, r.df);
  return r;
}

// Independent tests pooled into one: the statistics and the degrees of freedom add.
inline ChiSquare combine(std::span<const ChiSquare> parts) {
  ChiSquare r;
  for (const ChiSquare& part : parts) {
    r.statistic += part.statistic;
    r.df += part.df;
  }
  r.p_value = std::isinf(r.statistic) ? 0.0 : chi_square_p_value(r.statistic, r.df);
  return r;
}

}  // namespace augur::testing
