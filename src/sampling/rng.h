// Random sources for sampling. Every random choice the engine makes goes through one Rng: the
// sampler's token draws, a drafter's draws and speculative acceptance's tests and draws. The
// interface is injectable so tests can script the uniforms (ScriptedRng) or take every outcome of
// every choice with its exact probability (tests/sampling/enumerating_rng.h), which is how the
// exact-law tests drive the whole generation loop. SeededRng is the production source.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace augur::sampling {

// A source of random choices; a session owns one and uses it from one thread (no locking).
// uniform() is the only thing an implementation must give. bernoulli() and categorical() name the
// law of a choice and, by default, spend exactly one uniform on it; a test overrides them to
// enumerate outcomes (it then never needs uniform()).
class Rng {
 public:
  virtual ~Rng() = default;
  virtual double uniform() = 0;  // in [0, 1)

  // True with probability `prob` in [0, 1]: uniform() < prob, so 1 always and 0 never succeeds.
  virtual bool bernoulli(double prob);
  // Index i with probability weights[i] / sum(weights); weights are >= 0 with a positive, finite
  // sum (programmer error otherwise) and need not be normalised. Inverse CDF: with u = uniform()
  // and S = sum(weights) (in double), the first index whose running sum exceeds u * S. Never
  // returns a zero-weight index: the running sum only grows at positive entries and the
  // comparison is strict, so u = 0 skips leading zeros and a u on a step boundary belongs to the
  // next positive entry.
  virtual int32_t categorical(std::span<const float> weights);
  virtual int32_t categorical(std::span<const double> weights);
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
