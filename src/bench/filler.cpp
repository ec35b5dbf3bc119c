#include "bench/filler.h"

#include <cstddef>

namespace augur::bench {

std::vector<int32_t> filler_tokens(int64_t n, int64_t n_vocab) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  uint32_t x = 2463534242u;  // xorshift32
  for (auto& t : tokens) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t = static_cast<int32_t>(3 + x % static_cast<uint32_t>(n_vocab - 3));
  }
  return tokens;
}

}  // namespace augur::bench
