// How many leading tokens two sequences share: what a cache built for one can keep for the other.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace augur::spec {

inline int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  return static_cast<int64_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first -
                              a.begin());
}

}  // namespace augur::spec
