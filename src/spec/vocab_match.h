// A draft model proposes token ids that the target verifies, so both must mean the same thing
// by every id: same vocabulary size, same token texts, same special tokens. llama.cpp allows
// small differences; we refuse any, because a silently shifted id changes the output.
#pragma once

#include "model/model.h"

namespace augur::spec {

// Throws Unsupported naming the first difference (size, token id and both texts, or special id).
void check_same_vocabulary(const model::Model& target, const model::Model& draft);

}  // namespace augur::spec
