// Order statistics for benchmark samples: median and quartiles by linear interpolation between
// order statistics (the "type 7" rule of R and NumPy's default).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace augur::bench {

// q in [0, 1]; values must be non-empty.
double quantile(std::vector<double> values, double q);
double median(const std::vector<double>& values);
// {"median", "min", "max", "q1", "q3", "iqr"}; an empty input gives an empty object.
nlohmann::json spread(const std::vector<double>& values);

}  // namespace augur::bench
