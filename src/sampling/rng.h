// Uniform random sources for sampling. The interface is injectable so tests (and the
// speculative-acceptance enumeration) can script the exact draws; SeededRng is the production
// source. Owns no distributions: turning a uniform into a token is sampler.h's draw().
#pragma once

#include <cstdint>
#include <random>

namespace augur::sampling {

// A source of independent uniform doubles in [0, 1). A session owns one and uses it from one
// thread; implementations need no locking.
class Rng {
 public:
  virtual ~Rng() = default;
  virtual double uniform() = 0;  // in [0, 1)
};

// std::mt19937_64 seeded with `seed`; each uniform() consumes one 64-bit output and keeps its
// top 53 bits, (x >> 11) * 2^-53, so every value is an exact double in [0, 1) and the stream is
// the same on every platform (std::uniform_real_distribution is not specified that tightly).
class SeededRng final : public Rng {
 public:
  explicit SeededRng(uint64_t seed);
  double uniform() override;

 private:
  std::mt19937_64 engine_;
};

}  // namespace augur::sampling
