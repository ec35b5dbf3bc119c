#include "model/heads/head_vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "common/error.h"
#include "model/blocks/weights.h"

namespace augur::model::heads {

int64_t checked_int(const gguf::File& f, const std::string& key, int64_t lo, int64_t hi) {
  const int64_t v = f.get_int(key);
  if (v < lo || v > hi) {
    throw FormatError(fmt::format("{}: {} = {} is outside [{}, {}]", f.path(), key, v, lo, hi));
  }
  return v;
}

HeadVocab load_head_vocab(const gguf::File& f, const Model& target, int64_t D) {
  using blocks::load_matrix;
  const HParams& thp = target.hparams();
  const gguf::File& tf = target.file();
  HeadVocab v;
  if (f.find_tensor("token_embd.weight")) {
    v.token_embd = load_matrix(f, "token_embd.weight", D, thp.n_vocab);
  } else {
    if (thp.n_embd != D) {
      throw InvalidArgument(fmt::format(
          "{}: the head is {} wide but the target's embeddings are {}: it needs its own "
          "token_embd.weight",
          f.path(), D, thp.n_embd));
    }
    v.token_embd = load_matrix(tf, "token_embd.weight", D, thp.n_vocab);
  }
  if (const auto* d2t = f.find_tensor("d2t")) {
    if (d2t->type != gguf::TensorType::I64 || d2t->ne.size() != 1 || d2t->ne[0] < 1 ||
        d2t->ne[0] > thp.n_vocab) {
      throw FormatError(
          fmt::format("{}: d2t must be I64 [n] with 1 <= n <= {}", f.path(), thp.n_vocab));
    }
    std::set<int64_t> seen;
    for (int64_t i = 0; i < d2t->ne[0]; ++i) {
      int64_t id = 0;
      std::memcpy(&id, d2t->data + i * 8, 8);
      if (id < 0 || id >= thp.n_vocab || !seen.insert(id).second) {
        throw FormatError(
            fmt::format("{}: d2t[{}] = {} is not a distinct target token id in [0, {})", f.path(),
                        i, id, thp.n_vocab));
      }
      v.d2t.push_back(static_cast<int32_t>(id));
    }
  }
  const auto draft_vocab = v.d2t.empty() ? thp.n_vocab : static_cast<int64_t>(v.d2t.size());
  if (f.find_tensor("output.weight")) {
    v.output = load_matrix(f, "output.weight", D, draft_vocab);
  } else {
    if (!v.d2t.empty() || thp.n_embd != D) {
      throw FormatError(
          fmt::format("{}: no output.weight, and the target's head does not fit ({})", f.path(),
                      v.d2t.empty() ? "another width" : "a reduced vocabulary needs its own head"));
    }
    v.output =
        load_matrix(tf, tf.find_tensor("output.weight") ? "output.weight" : "token_embd.weight", D,
                    thp.n_vocab);
  }
  return v;
}

void scatter_d2t(const std::vector<int32_t>& d2t, const float* draft, int64_t n_rows,
                 int64_t n_vocab, float* out) {
  const auto vd = static_cast<int64_t>(d2t.size());
  for (int64_t i = 0; i < n_rows; ++i) {
    float* row = out + i * n_vocab;
    std::fill(row, row + n_vocab, -std::numeric_limits<float>::infinity());
    for (int64_t j = 0; j < vd; ++j) row[d2t[static_cast<size_t>(j)]] = draft[i * vd + j];
  }
}

}  // namespace augur::model::heads
