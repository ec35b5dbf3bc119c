// The two inner loops of attention over a cache, per query head, with runtime ISA dispatch:
//   scores:        out[k] = dot(q, keys[k]) * scale          for k < n_keys
//   weighted_sum:  out[d] += sum_k w[k] * values[k][d]       for d < head_dim
// keys and values are [n_keys, head_dim] rows. A query row's result does not depend on how many
// rows share the forward call (each is computed on its own), which keeps verify rows bitwise
// equal to decode rows.
#pragma once

#include <cstdint>

namespace augur::kernels {

void attention_scores(const float* q, const float* keys, int64_t n_keys, int64_t head_dim,
                      float scale, float* out);
void attention_weighted_sum(const float* w, const float* values, int64_t n_keys, int64_t head_dim,
                            float* out);

namespace detail {
void attention_scores_avx2(const float* q, const float* keys, int64_t n_keys, int64_t head_dim,
                           float scale, float* out);
void attention_weighted_sum_avx2(const float* w, const float* values, int64_t n_keys,
                                 int64_t head_dim, float* out);
}  // namespace detail

}  // namespace augur::kernels
