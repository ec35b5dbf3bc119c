#include "model/blocks/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_ops.h"

namespace augur::model::blocks {
namespace {

// Queries that read a kv head's rows together: its query heads times a few batch rows, so each
// key and value row is loaded once per L1 visit for all of them (the kernels share reads only,
// never arithmetic).
constexpr int64_t kSharedQueries = 4;

// Index of the slot-th item in the order 0, n-1, 1, n-2, ...: batch row i attends to n_past+i+1
// keys, so in this order any run of slots costs about the same per slot, and the pool's
// contiguous chunks get equal work.
int64_t balanced(int64_t slot, int64_t n) {
  return slot % 2 == 0 ? slot / 2 : n - 1 - slot / 2;
}

}  // namespace

void attention(const float* q, Memory& memory, int layer, int64_t n_past, int64_t M,
               const HParams& hp, float* out, kernels::ThreadPool& pool) {
  const int64_t head_dim = hp.head_dim;
  const int64_t q_dim = hp.q_dim();
  const int64_t group = hp.n_head / hp.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  // Work items are (kv head, its query heads in sets of up to kSharedQueries, block of rows),
  // kv-head-major, each holding heads_per_item heads for rows_per_block rows. Every (row, head)
  // is computed on its own, so a row's result does not depend on M, on the blocks, or on the
  // thread that runs it.
  const int64_t heads_per_item = std::min(group, kSharedQueries);
  const int64_t head_sets = (group + heads_per_item - 1) / heads_per_item;
  const int64_t rows_per_block = std::max<int64_t>(1, kSharedQueries / heads_per_item);
  const int64_t n_blocks = (M + rows_per_block - 1) / rows_per_block;
  pool.parallel_for(hp.n_head_kv * head_sets * n_blocks, [&](int64_t begin, int64_t end) {
    // Per-thread score rows, grown once to the longest context seen; never per token.
    thread_local std::vector<float> scores;  // [kSharedQueries, n_past + M]
    const int64_t stride = n_past + M;
    if (static_cast<int64_t>(scores.size()) < kSharedQueries * stride) {
      scores.resize(kSharedQueries * stride);
    }
    const float* q_rows[kSharedQueries];
    float* score_rows[kSharedQueries];
    float* out_rows[kSharedQueries];
    int64_t n_keys[kSharedQueries];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t kv_head = item / (head_sets * n_blocks);
      const int64_t head_set = item / n_blocks % head_sets;
      const int64_t block = balanced(item % n_blocks, n_blocks);
      const int64_t first_head = kv_head * group + head_set * heads_per_item;
      const int64_t last_head = std::min((kv_head + 1) * group, first_head + heads_per_item);
      const int64_t first_row = block * rows_per_block;
      const int64_t last_row = std::min(M, first_row + rows_per_block);
      int64_t n_queries = 0;
      for (int64_t row = first_row; row < last_row; ++row) {
        for (int64_t head = first_head; head < last_head; ++head) {
          q_rows[n_queries] = q + row * q_dim + head * head_dim;
          out_rows[n_queries] = out + row * q_dim + head * head_dim;
          score_rows[n_queries] = scores.data() + n_queries * stride;
          n_keys[n_queries] = n_past + row + 1;
          ++n_queries;
        }
      }
      const float* keys = memory.keys(layer, static_cast<int>(kv_head));
      const float* values = memory.values(layer, static_cast<int>(kv_head));
      kernels::attention_scores_multi(q_rows, n_queries, keys, n_keys, head_dim, scale, score_rows);
      for (int64_t query = 0; query < n_queries; ++query) {
        kernels::softmax_inplace(score_rows[query], n_keys[query]);
        std::fill(out_rows[query], out_rows[query] + head_dim, 0.0f);
      }
      kernels::attention_weighted_sum_multi(score_rows, n_queries, values, n_keys, head_dim,
                                            out_rows);
    }
  });
}

}  // namespace augur::model::blocks
