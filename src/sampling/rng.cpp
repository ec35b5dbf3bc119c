#include "sampling/rng.h"

namespace augur::sampling {

SeededRng::SeededRng(uint64_t seed) : engine_(seed) {}

double SeededRng::uniform() {
  constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;  // 2^-53
  return static_cast<double>(engine_() >> 11) * kTwoToMinus53;
}

}  // namespace augur::sampling
