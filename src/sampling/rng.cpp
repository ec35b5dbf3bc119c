#include "sampling/rng.h"

#include <cmath>

#include "common/error.h"

namespace augur::sampling {
namespace {

template <typename Weight>
int32_t inverse_cdf(std::span<const Weight> weights, double u) {
  double total = 0.0;
  for (const Weight weight : weights) {
    AUGUR_CHECK(weight >= Weight(0),
                "a categorical draw needs non-negative weights (NaN included)");
    total += weight;
  }
  AUGUR_CHECK(total > 0.0 && std::isfinite(total),
              "a categorical draw needs a positive, finite sum");
  const double target = u * total;
  // The same additions in the same order as `total`, so the running sum ends exactly at it.
  double cumulative = 0.0;
  size_t last_positive = 0;
  for (size_t index = 0; index < weights.size(); ++index) {
    if (weights[index] <= Weight(0)) continue;
    cumulative += weights[index];
    last_positive = index;
    if (cumulative > target) return static_cast<int32_t>(index);
  }
  // Unreachable in IEEE double: for u < 1 the rounded u * total stays below total, which the
  // running sum reaches exactly. Kept so a non-conforming Rng (u == 1) still gets a valid index.
  return static_cast<int32_t>(last_positive);
}

}  // namespace

bool Rng::bernoulli(double prob) {
  return uniform() < prob;
}

int32_t Rng::categorical(std::span<const float> weights) {
  return inverse_cdf(weights, uniform());
}

int32_t Rng::categorical(std::span<const double> weights) {
  return inverse_cdf(weights, uniform());
}

SeededRng::SeededRng(uint64_t seed) : engine_(seed) {}

double SeededRng::uniform() {
  constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;  // 2^-53
  return static_cast<double>(engine_() >> 11) * kTwoToMinus53;
}

}  // namespace augur::sampling
