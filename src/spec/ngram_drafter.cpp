#include "spec/ngram_drafter.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace augur::spec {

NgramDrafter::NgramDrafter(int n_min, int n_max) : n_min_(n_min), n_max_(n_max) {
  if (n_min < 1 || n_max < n_min) {
    throw InvalidArgument(
        fmt::format("n-gram sizes {}..{} are invalid: need 1 <= n_min <= n_max", n_min, n_max));
  }
}

void NgramDrafter::propose(const DraftRequest& request, Draft& out) {
  out.clear();
  const auto ctx = request.context;
  const auto len = static_cast<int64_t>(ctx.size());
  if (request.k_max <= 0) return;
  for (int n = std::min<int64_t>(n_max_, len - 1); n >= n_min_; --n) {
    const auto suffix = ctx.subspan(static_cast<size_t>(len - n));
    // Earlier occurrences end before the suffix itself, most recent first; what follows a match
    // starts at `start + n` and must lie inside the context.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), ctx.begin() + start)) continue;
      // The continuation may run past the end of the context into the proposal itself: a match
      // one period back in a repeating tail then proposes the repetition for all k tokens.
      const int64_t from = start + n;
      for (int64_t i = 0; i < request.k_max; ++i) {
        const int64_t at = from + i;
        out.tokens.push_back(at < len ? ctx[static_cast<size_t>(at)]
                                      : out.tokens[static_cast<size_t>(at - len)]);
      }
      return;
    }
  }
}

}  // namespace augur::spec
