#include "bench/statistics.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace augur::bench {

double quantile(std::vector<double> values, double q) {
  AUGUR_CHECK(!values.empty() && q >= 0.0 && q <= 1.0, "quantile of a non-empty set, q in [0, 1]");
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

double median(const std::vector<double>& values) {
  return quantile(values, 0.5);
}

nlohmann::json spread(const std::vector<double>& values) {
  if (values.empty()) return nlohmann::json::object();
  const double q1 = quantile(values, 0.25), q3 = quantile(values, 0.75);
  return {{"median", median(values)},
          {"min", *std::min_element(values.begin(), values.end())},
          {"max", *std::max_element(values.begin(), values.end())},
          {"q1", q1},
          {"q3", q3},
          {"iqr", q3 - q1}};
}

}  // namespace augur::bench
