// What every drafter head shares with its target: a bounded metadata read, and the vocabulary
// ends (token embeddings, output head, optional d2t reduced vocabulary) that are the file's own
// when it has them, else views into the target's mapping (the target must outlive the head).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "model/model.h"
#include "tensor/matrix.h"

namespace augur::model::heads {

// Widths and counts no real drafter exceeds: a hostile header fails before anything is sized.
constexpr int64_t kMaxHeadWidth = 1 << 16;

// Integer key `key` of f within [lo, hi]; FormatError names the file, the key and the range.
int64_t checked_int(const gguf::File& f, const std::string& key, int64_t lo, int64_t hi);

struct HeadVocab {
  tensor::Matrix token_embd;  // [n_vocab, D]
  tensor::Matrix output;      // [draft_vocab, D]
  std::vector<int32_t> d2t;   // [draft_vocab] target ids, empty = identity
};

// Loads token_embd.weight, output.weight and d2t of a head D wide from f, falling back to the
// target's embeddings and head (which must then be D wide and the vocabulary unreduced).
HeadVocab load_head_vocab(const gguf::File& f, const Model& target, int64_t D);

// Full-vocabulary logits out [n_rows, n_vocab] from the head's rows draft [n_rows, d2t.size()]:
// each lands on its target id, every other token is -inf (it cannot be drafted).
void scatter_d2t(const std::vector<int32_t>& d2t, const float* draft, int64_t n_rows,
                 int64_t n_vocab, float* out);

}  // namespace augur::model::heads
