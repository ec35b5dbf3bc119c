#include "model/blocks/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_ops.h"
#include "model/blocks/ops.h"

namespace augur::model::blocks {

void attention(const float* q, Memory& memory, int layer, int64_t n_past, int64_t M,
               const HParams& hp, float* out, kernels::ThreadPool& pool) {
  const int64_t head_dim = hp.head_dim;
  const int64_t q_dim = hp.q_dim();
  const int64_t group = hp.n_head / hp.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int64_t n_items = M * hp.n_head;
  pool.parallel_for(n_items, [&](int64_t begin, int64_t end) {
    // Per-thread score row, grown once to the longest context seen; never per token.
    thread_local std::vector<float> scores;
    if (static_cast<int64_t>(scores.size()) < n_past + M) scores.resize(n_past + M);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t row = item / hp.n_head;
      const int64_t head = item % hp.n_head;
      const int64_t kv_head = head / group;
      const float* q_head = q + row * q_dim + head * head_dim;
      const float* keys = memory.keys(layer, static_cast<int>(kv_head));
      const float* values = memory.values(layer, static_cast<int>(kv_head));
      const int64_t n_keys = n_past + row + 1;
      kernels::attention_scores(q_head, keys, n_keys, head_dim, scale, scores.data());
      const float max_score = *std::max_element(scores.begin(), scores.begin() + n_keys);
      double sum = 0.0;
      for (int64_t key = 0; key < n_keys; ++key) {
        const float e = std::exp(scores[key] - max_score);
        scores[key] = e;
        sum += e;
      }
      const auto inv_sum = static_cast<float>(1.0 / sum);
      for (int64_t key = 0; key < n_keys; ++key) scores[key] *= inv_sum;
      float* o = out + row * q_dim + head * head_dim;
      std::fill(o, o + head_dim, 0.0f);
      kernels::attention_weighted_sum(scores.data(), values, n_keys, head_dim, o);
    }
  });
}

}  // namespace augur::model::blocks
