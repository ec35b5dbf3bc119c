// Deterministic filler tokens for timing runs (above the usual control ids 0..2): a forward's
// cost does not depend on which tokens it sees, only on how many.
#pragma once

#include <cstdint>
#include <vector>

namespace augur::bench {

std::vector<int32_t> filler_tokens(int64_t n, int64_t n_vocab);

}  // namespace augur::bench
