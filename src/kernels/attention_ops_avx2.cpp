// AVX2 + FMA attention loops. Compiled with AVX2 flags and only called when the CPU has them;
// helpers are file-local (see matmul_avx2.cpp for why).
#include <immintrin.h>

#include "kernels/attention_ops.h"

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

void attention_scores_avx2(const float* q, const float* keys, int64_t n_keys, int64_t head_dim,
                           float scale, float* out) {
  const int64_t vec = head_dim / 8 * 8;
  for (int64_t k = 0; k < n_keys; ++k) {
    const float* key = keys + k * head_dim;
    // Two chains over alternating 8-float blocks, then the scalar tail.
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 16 <= vec; d += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(key + d), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 8), _mm256_loadu_ps(key + d + 8), a1);
    }
    if (d < vec) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(key + d), a0);
    float sum = hsum(_mm256_add_ps(a0, a1));
    for (d = vec; d < head_dim; ++d) sum += q[d] * key[d];
    out[k] = sum * scale;
  }
}

void attention_weighted_sum_avx2(const float* w, const float* values, int64_t n_keys,
                                 int64_t head_dim, float* out) {
  const int64_t vec = head_dim / 8 * 8;
  // Blocks of up to 64 output floats stay in eight registers across all keys.
  for (int64_t d0 = 0; d0 < vec; d0 += 64) {
    const int n = static_cast<int>((vec - d0 < 64 ? vec - d0 : 64) / 8);
    __m256 acc[8];
    for (int i = 0; i < n; ++i) acc[i] = _mm256_loadu_ps(out + d0 + 8 * i);
    for (int64_t k = 0; k < n_keys; ++k) {
      const __m256 wk = _mm256_set1_ps(w[k]);
      const float* v = values + k * head_dim + d0;
      for (int i = 0; i < n; ++i) acc[i] = _mm256_fmadd_ps(wk, _mm256_loadu_ps(v + 8 * i), acc[i]);
    }
    for (int i = 0; i < n; ++i) _mm256_storeu_ps(out + d0 + 8 * i, acc[i]);
  }
  for (int64_t d = vec; d < head_dim; ++d) {
    float sum = out[d];
    for (int64_t k = 0; k < n_keys; ++k) sum += w[k] * values[k * head_dim + d];
    out[d] = sum;
  }
}

#else

void attention_scores_avx2(const float*, const float*, int64_t, int64_t, float, float*) {}
void attention_weighted_sum_avx2(const float*, const float*, int64_t, int64_t, float*) {}

#endif

}  // namespace augur::kernels::detail
