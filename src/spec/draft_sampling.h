// The token-by-token drafting loop shared by drafters with a forward of their own (a draft
// model, layer-skip, an EAGLE-3 head): draw each draft from the current logits row with the
// session's sampler (q = that distribution), note its confidence when a planner asks, stop when
// it says so, else let the drafter compute the next row.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "spec/draft_source.h"

namespace augur::spec {

// `logits` holds the row of the first draft; `next(token)` must overwrite it with the row after
// `token`. `history` is scratch (context + drafts so far, the penalty history of each q row).
void draft_token_by_token(const DraftRequest& request, std::span<const float> logits,
                          std::vector<int32_t>& history, Draft& out,
                          const std::function<void(int32_t token)>& next);

}  // namespace augur::spec
