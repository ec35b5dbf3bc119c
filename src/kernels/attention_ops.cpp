#include "kernels/attention_ops.h"

#include "kernels/isa.h"

namespace augur::kernels {
namespace {

float dot_scalar(const float* a, const float* b, int64_t n) {
  // Eight independent partial sums let the compiler vectorise without reassociation flags.
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int lane = 0; lane < 8; ++lane) acc[lane] += a[i + lane] * b[i + lane];
  }
  float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

void attention_scores(const float* q, const float* keys, int64_t n_keys, int64_t head_dim,
                      float scale, float* out) {
  if (current_isa() == Isa::kAvx2) {
    return detail::attention_scores_avx2(q, keys, n_keys, head_dim, scale, out);
  }
  for (int64_t k = 0; k < n_keys; ++k)
    out[k] = dot_scalar(q, keys + k * head_dim, head_dim) * scale;
}

void attention_weighted_sum(const float* w, const float* values, int64_t n_keys, int64_t head_dim,
                            float* out) {
  if (current_isa() == Isa::kAvx2) {
    return detail::attention_weighted_sum_avx2(w, values, n_keys, head_dim, out);
  }
  for (int64_t k = 0; k < n_keys; ++k) {
    const float* v = values + k * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) out[d] += w[k] * v[d];
  }
}

}  // namespace augur::kernels
