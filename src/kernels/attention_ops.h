// The inner loops of attention over a cache, per query head, with runtime ISA dispatch:
//   scores:        out[k] = dot(q, keys[k]) * scale          for k < n_keys
//   softmax:       x[k] = exp(x[k] - max) / sum              in place
//   weighted_sum:  out[d] += sum_k w[k] * values[k][d]       for d < head_dim
// keys and values are [n_keys, head_dim] rows. Each result depends only on its own inputs and the
// count (never on how many query rows share a forward call, or on which thread runs them), which
// keeps verify rows bitwise equal to decode rows. docs/kernels.md ("Attention") gives the exact
// arithmetic of each kernel.
#pragma once

#include <cstdint>

namespace augur::kernels {

// out[k] = dot(q, keys[k]) * scale. A key's dot product has the same operations whatever n_keys
// and wherever the key falls in its group of eight (llama.cpp's ggml_vec_dot_f32).
void attention_scores(const float* q, const float* keys, int64_t n_keys, int64_t head_dim,
                      float scale, float* out);

// x[0..n) = softmax(x): exp(x[k] - max) / sum, the sum in a fixed order (groups of 16 summed in
// float, the groups in double). Entries may be -inf (they become 0); n >= 1, not all -inf.
void softmax_inplace(float* x, int64_t n);

// out[k] = exp(x[k]) for x[k] <= 0 (-inf included): llama.cpp's vectorised expf, at most 2 floats
// from the correctly rounded value (2.24 ulp of the exact one at worst); results below FLT_MIN are
// rounded to subnormals as one multiply would. Inputs above 0 are not supported. The exponential
// softmax_inplace uses; exposed for tests.
void exp_nonpositive(const float* x, int64_t n, float* out);

// out[d] += sum_k w[k] * values[k][d], the sum taken as 16 chains of keys (k mod 16), then the
// chains added in a fixed tree.
void attention_weighted_sum(const float* w, const float* values, int64_t n_keys, int64_t head_dim,
                            float* out);

// The same for several queries that read the same keys and values (the query heads of one kv
// head, a few batch rows): query i sees rows [0, n_keys[i]). Each query's results equal, bit for
// bit, what the one-query functions give it; only memory reads are shared.
void attention_scores_multi(const float* const* q, int64_t n_queries, const float* keys,
                            const int64_t* n_keys, int64_t head_dim, float scale,
                            float* const* out);
void attention_weighted_sum_multi(const float* const* w, int64_t n_queries, const float* values,
                                  const int64_t* n_keys, int64_t head_dim, float* const* out);

namespace detail {
void attention_scores_avx2(const float* const* q, int64_t n_queries, const float* keys,
                           const int64_t* n_keys, int64_t head_dim, float scale, float* const* out);
void softmax_inplace_avx2(float* x, int64_t n);
void exp_nonpositive_avx2(const float* x, int64_t n, float* out);
void attention_weighted_sum_avx2(const float* const* w, int64_t n_queries, const float* values,
                                 const int64_t* n_keys, int64_t head_dim, float* const* out);
}  // namespace detail

}  // namespace augur::kernels
