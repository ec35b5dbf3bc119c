// Prompt lookup / n-gram drafting: no model. Finds the longest suffix of the committed context
// (n_max tokens down to n_min) that occurred earlier in the context, takes its most recent
// earlier occurrence, and proposes the k tokens that followed it (continuing into the proposal
// itself when the match is less than k tokens back: a repeating tail). Deterministic, so its q is
// one-hot (Draft::q stays empty). Code and other repetitive text is where it pays.
//
// Cost: O(context * n_max) token comparisons per proposal, a scan from the end that stops at
// the first (most recent) match of the longest n; tiny next to one target forward for contexts
// of thousands of tokens.
#pragma once

#include "spec/draft_source.h"

namespace augur::spec {

class NgramDrafter final : public DraftSource {
 public:
  // 1 <= n_min <= n_max (InvalidArgument otherwise).
  explicit NgramDrafter(int n_min = 1, int n_max = 4);

  std::string name() const override { return "ngram"; }
  void begin(std::span<const int32_t>) override {}
  void propose(const DraftRequest& request, Draft& out) override;
  void observe(int) override {}
  int64_t memory_bytes() const override { return static_cast<int64_t>(sizeof(*this)); }
  bool proposals_are_free() const override { return true; }

 private:
  int n_min_, n_max_;
};

}  // namespace augur::spec
