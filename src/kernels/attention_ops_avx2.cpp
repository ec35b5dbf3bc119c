// AVX2 + FMA attention loops. Compiled with AVX2 flags and only called when the CPU has them;
// helpers are file-local (see matmul_avx2.cpp for why). Each kernel repeats the operations of
// llama.cpp's AVX-512 build (docs/kernels.md, "Attention"); the comments here say how eight-lane
// registers carry its sixteen-lane arithmetic.
#include <immintrin.h>

#include "kernels/attention_ops.h"

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)
namespace {

#define AUGUR_ALWAYS_INLINE inline __attribute__((always_inline))

// Lanes [0, count) set, the others clear (count may be <= 0 or >= 8).
AUGUR_ALWAYS_INLINE __m256i first_lanes(int64_t count) {
  const int c = count < 0 ? 0 : (count > 8 ? 8 : static_cast<int>(count));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Keeps a product rounded on its own, so that GCC does not fuse it with the following addition.
AUGUR_ALWAYS_INLINE __m256 rounded(__m256 v) {
  asm("" : "+x"(v));
  return v;
}

// The sum of eight lanes: halves, then (0+2, 1+3), then the two. These are the last three steps
// of _mm512_reduce_add_ps (and tinyBLAS's hsum).
AUGUR_ALWAYS_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// hsum of eight vectors at once: lane k = hsum(v[k]) with the same additions. The halves of keys
// k and k+4 are added in one register, then unpack and shuffle pair lanes (0,2) and (1,3).
AUGUR_ALWAYS_INLINE __m256 hsum8x8(const __m256 v[8]) {
  __m256 halves[4];  // [lo+hi of v[k] | lo+hi of v[k+4]]
#pragma GCC unroll 16
  for (int k = 0; k < 4; ++k) {
    halves[k] = _mm256_add_ps(_mm256_permute2f128_ps(v[k], v[k + 4], 0x20),
                              _mm256_permute2f128_ps(v[k], v[k + 4], 0x31));
  }
  // [s0+s2 of key k, of key k+1, s1+s3 of k, of k+1 | the same for k+4, k+5]
  const __m256 r01 = _mm256_add_ps(_mm256_unpacklo_ps(halves[0], halves[1]),
                                   _mm256_unpackhi_ps(halves[0], halves[1]));
  const __m256 r23 = _mm256_add_ps(_mm256_unpacklo_ps(halves[2], halves[3]),
                                   _mm256_unpackhi_ps(halves[2], halves[3]));
  return _mm256_add_ps(_mm256_shuffle_ps(r01, r23, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm256_shuffle_ps(r01, r23, _MM_SHUFFLE(3, 2, 3, 2)));
}

// Rows r[0..8) of eight floats become columns: r[e] lane k = old r[k] lane e.
AUGUR_ALWAYS_INLINE void transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// One key's ((a0+a4)+(a2+a6)) and ((a1+a5)+(a3+a7)), added.
AUGUR_ALWAYS_INLINE __m256 key_sum(const __m256 a[8]) {
  const __m256 lo = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6]));
  const __m256 hi = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]));
  return _mm256_add_ps(hi, lo);
}

// Dot products of q with eight keys, each as ggml_vec_dot_f32 computes it on AVX-512: eight
// accumulators a[j] (elements 8j..8j+7 of every 64-element step; FMA chains across steps), then
// ((a0+a4)+(a2+a6)) and ((a1+a5)+(a3+a7)) (its four 16-lane sums reduced pairwise), their sum,
// and hsum (the rest of _mm512_reduce_add_ps). Elements past the last whole step are then added
// one at a time as separately rounded products, every key in its own lane. A key's operations do
// not depend on its slot. kSteps: 1 for heads of 64..127 (products only, q's step held in
// registers), 2 for longer ones (any number of steps); heads shorter than 64 have only leftovers.
template <int kSteps>
AUGUR_ALWAYS_INLINE __m256 whole_steps(const float* q, const float* const key[8], int64_t n_steps) {
  __m256 v[8];
  if constexpr (kSteps == 1) {
    __m256 qv[8];
#pragma GCC unroll 16
    for (int j = 0; j < 8; ++j) qv[j] = _mm256_loadu_ps(q + 8 * j);
#pragma GCC unroll 16
    for (int k = 0; k < 8; ++k) {
      __m256 a[8];
#pragma GCC unroll 16
      for (int j = 0; j < 8; ++j) {
        a[j] = rounded(_mm256_mul_ps(qv[j], _mm256_loadu_ps(key[k] + 8 * j)));
      }
      v[k] = key_sum(a);
    }
  } else {
#pragma GCC unroll 16
    for (int k = 0; k < 8; ++k) {
      __m256 a[8];
#pragma GCC unroll 16
      for (int j = 0; j < 8; ++j) {
        a[j] = _mm256_mul_ps(_mm256_loadu_ps(q + 8 * j), _mm256_loadu_ps(key[k] + 8 * j));
      }
      for (int64_t step = 1; step < n_steps; ++step) {
        const int64_t d = 64 * step;
#pragma GCC unroll 16
        for (int j = 0; j < 8; ++j) {
          a[j] = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 8 * j),
                                 _mm256_loadu_ps(key[k] + d + 8 * j), a[j]);
        }
      }
      v[k] = key_sum(a);
    }
  }
  return hsum8x8(v);
}

// sums (lane k: key k's dot product so far) plus the products of elements d0..head_dim-1, one at
// a time in element order.
__attribute__((noinline)) __m256 add_leftovers(__m256 sums, const float* q,
                                               const float* const key[8], int64_t d0,
                                               int64_t head_dim) {
  for (int64_t d = d0; d < head_dim; d += 8) {
    const int64_t count = head_dim - d < 8 ? head_dim - d : 8;
    __m256 columns[8];
    if (count == 8) {
#pragma GCC unroll 16
      for (int k = 0; k < 8; ++k) columns[k] = _mm256_loadu_ps(key[k] + d);
    } else {
      const __m256i mask = first_lanes(count);
#pragma GCC unroll 16
      for (int k = 0; k < 8; ++k) columns[k] = _mm256_maskload_ps(key[k] + d, mask);
    }
    transpose8x8(columns);
    for (int e = 0; e < count; ++e) {
      sums = _mm256_add_ps(sums, rounded(_mm256_mul_ps(_mm256_set1_ps(q[d + e]), columns[e])));
    }
  }
  return sums;
}

template <int kSteps>
AUGUR_ALWAYS_INLINE __m256 group_dot(const float* q, const float* const key[8], int64_t head_dim) {
  const int64_t n_steps = head_dim / 64;
  __m256 sums = _mm256_setzero_ps();
  if constexpr (kSteps > 0) sums = whole_steps<kSteps>(q, key, n_steps);
  if (64 * n_steps < head_dim) sums = add_leftovers(sums, q, key, 64 * n_steps, head_dim);
  return sums;
}

// llama.cpp's AVX-512 ggml_v_expf for x <= 0, on eight lanes: n = round(x / ln2), b = x - n ln2
// (Cody-Waite, two constants), j = 1 + b + ... (degree-5 polynomial), result = j * 2^n rounded
// once as vscalefps does. Here j * 2^(n+64) is exact (normal for n >= -190) and the multiply by
// 2^-64 is the one rounding, so subnormal results match too; n < -160 gives 0 (so does -inf).
AUGUR_ALWAYS_INLINE __m256 exp8(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                    _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(
          _mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
          _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  // z's low mantissa bits hold n, so z << 23 is n in the exponent field.
  const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
  const __m256 pow2_n_plus_64 =
      _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(0x1p64f))));
  const __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, pow2_n_plus_64), _mm256_set1_ps(0x1p-64f));
  const __m256 underflow = _mm256_cmp_ps(n, _mm256_set1_ps(-160.0f), _CMP_LT_OQ);
  return _mm256_andnot_ps(underflow, res);
}

// The weighted sums of up to kMaxSharedQueries queries for outputs d0 .. d0 + 8*NB (the last
// block may be partial: `last_mask`), in tinyBLAS's order for its 16-float registers: sixteen FMA
// chains per output, chain r taking keys r, r+16, r+32, ... in order, then _mm512_reduce_add_ps
// over the sixteen. Keys are taken in chunks of kChunkKeys: within a chunk each chain runs over
// its keys with its NB blocks in registers, which reads the chunk as four sequential streams (one
// pass per chain over all keys would stride 16 rows and defeat the prefetchers), and every query
// meets the chunk while it is in L1.
constexpr int64_t kChunkKeys = 64;
constexpr int kMaxSharedQueries = 4;

template <int NB, bool kPartial>
void weighted_block(const float* const* w, int n_queries, const float* values,
                    const int64_t* n_keys, int64_t head_dim, __m256i last_mask, int64_t d0,
                    float* const* out) {
  __m256 chains[kMaxSharedQueries][16][NB];
  int64_t max_keys = 0;
  for (int query = 0; query < n_queries; ++query) {
    max_keys = n_keys[query] > max_keys ? n_keys[query] : max_keys;
    for (int r = 0; r < 16; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < NB; ++i) chains[query][r][i] = _mm256_setzero_ps();
    }
  }
  for (int64_t k0 = 0; k0 < max_keys; k0 += kChunkKeys) {
    for (int query = 0; query < n_queries; ++query) {
      const int64_t k_end = k0 + kChunkKeys < n_keys[query] ? k0 + kChunkKeys : n_keys[query];
      const float* wq = w[query];
      for (int r = 0; r < 16; ++r) {
        __m256 acc[NB];
#pragma GCC unroll 16
        for (int i = 0; i < NB; ++i) acc[i] = chains[query][r][i];
        for (int64_t k = k0 + r; k < k_end; k += 16) {
          const __m256 wk = _mm256_set1_ps(wq[k]);
          const float* v = values + k * head_dim;
#pragma GCC unroll 16
          for (int i = 0; i < NB - 1; ++i) {
            acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(v + 8 * i), wk, acc[i]);
          }
          const __m256 last = kPartial ? _mm256_maskload_ps(v + 8 * (NB - 1), last_mask)
                                       : _mm256_loadu_ps(v + 8 * (NB - 1));
          acc[NB - 1] = _mm256_fmadd_ps(last, wk, acc[NB - 1]);
        }
#pragma GCC unroll 16
        for (int i = 0; i < NB; ++i) chains[query][r][i] = acc[i];
      }
    }
  }
  for (int query = 0; query < n_queries; ++query) {
    float* o = out[query] + d0;
    for (int i = 0; i < NB; ++i) {
      const auto& c = chains[query];
      __m256 t8[8], t4[4];
#pragma GCC unroll 16
      for (int r = 0; r < 8; ++r) t8[r] = _mm256_add_ps(c[r + 8][i], c[r][i]);
#pragma GCC unroll 16
      for (int r = 0; r < 4; ++r) t4[r] = _mm256_add_ps(t8[r + 4], t8[r]);
      const __m256 sum = _mm256_add_ps(_mm256_add_ps(t4[0], t4[2]), _mm256_add_ps(t4[1], t4[3]));
      const __m256i mask = i == NB - 1 ? last_mask : _mm256_set1_epi32(-1);
      _mm256_maskstore_ps(o + 8 * i, mask, _mm256_add_ps(_mm256_maskload_ps(o + 8 * i, mask), sum));
    }
  }
}

// attention_scores_avx2 for heads with kSteps whole 64-element steps (see whole_steps).
template <int kSteps>
void scores_for_steps(const float* const* q, int64_t n_queries, const float* keys,
                      const int64_t* n_keys, int64_t head_dim, float scale, float* const* out) {
  const __m256 scale_v = _mm256_set1_ps(scale);
  int64_t max_keys = 0;
  for (int64_t query = 0; query < n_queries; ++query) {
    max_keys = n_keys[query] > max_keys ? n_keys[query] : max_keys;
  }
  // Groups of eight keys; every query meets a group while it is in L1.
  for (int64_t k0 = 0; k0 < max_keys; k0 += 8) {
    const float* key[8];
    for (int k = 0; k < 8; ++k) {
      key[k] = keys + (k0 + k < max_keys ? k0 + k : max_keys - 1) * head_dim;
    }
    for (int64_t query = 0; query < n_queries; ++query) {
      const int64_t n = n_keys[query];
      if (k0 + 8 <= n) {
        _mm256_storeu_ps(out[query] + k0,
                         _mm256_mul_ps(group_dot<kSteps>(q[query], key, head_dim), scale_v));
      } else if (k0 < n) {
        // The same group kernel with the query's last key repeated in the spare slots (never read
        // past it); only the real keys' scores are stored.
        const float* last_group[8];
        for (int k = 0; k < 8; ++k) {
          last_group[k] = keys + (k0 + k < n ? k0 + k : n - 1) * head_dim;
        }
        _mm256_maskstore_ps(
            out[query] + k0, first_lanes(n - k0),
            _mm256_mul_ps(group_dot<kSteps>(q[query], last_group, head_dim), scale_v));
      }
    }
  }
}

}  // namespace

void attention_scores_avx2(const float* const* q, int64_t n_queries, const float* keys,
                           const int64_t* n_keys, int64_t head_dim, float scale,
                           float* const* out) {
  if (head_dim < 64) return scores_for_steps<0>(q, n_queries, keys, n_keys, head_dim, scale, out);
  if (head_dim < 128) return scores_for_steps<1>(q, n_queries, keys, n_keys, head_dim, scale, out);
  scores_for_steps<2>(q, n_queries, keys, n_keys, head_dim, scale, out);
}

void exp_nonpositive_avx2(const float* x, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, exp8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = first_lanes(n - i);
    _mm256_maskstore_ps(out + i, mask, exp8(_mm256_maskload_ps(x + i, mask)));
  }
}

void softmax_inplace_avx2(float* x, int64_t n) {
  // The maximum (exact in any order).
  __m256 max8 = _mm256_set1_ps(-__builtin_inff());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) max8 = _mm256_max_ps(max8, _mm256_loadu_ps(x + i));
  __m128 max4 = _mm_max_ps(_mm256_castps256_ps128(max8), _mm256_extractf128_ps(max8, 1));
  max4 = _mm_max_ps(max4, _mm_movehl_ps(max4, max4));
  max4 = _mm_max_ss(max4, _mm_movehdup_ps(max4));
  float max = _mm_cvtss_f32(max4);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const __m256 max_v = _mm256_set1_ps(max);

  // exp(x - max) in groups of 16, one _mm512_reduce_add_ps per group (upper eight lanes plus
  // lower eight, then hsum) added to a double. The last group is padded with zeros, as llama.cpp's
  // masked cache slots are.
  double sum = 0.0;
  for (i = 0; i + 16 <= n; i += 16) {
    const __m256 lo = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), max_v));
    const __m256 hi = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), max_v));
    _mm256_storeu_ps(x + i, lo);
    _mm256_storeu_ps(x + i + 8, hi);
    sum += static_cast<double>(hsum(_mm256_add_ps(hi, lo)));
  }
  if (i < n) {
    const __m256i mask_lo = first_lanes(n - i);
    const __m256i mask_hi = first_lanes(n - i - 8);
    const __m256 lo = _mm256_and_ps(_mm256_castsi256_ps(mask_lo),
                                    exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask_lo), max_v)));
    const __m256 hi =
        _mm256_and_ps(_mm256_castsi256_ps(mask_hi),
                      exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i + 8, mask_hi), max_v)));
    _mm256_maskstore_ps(x + i, mask_lo, lo);
    _mm256_maskstore_ps(x + i + 8, mask_hi, hi);
    sum += static_cast<double>(hsum(_mm256_add_ps(hi, lo)));
  }

  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
  for (i = 0; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  }
  if (i < n) {
    const __m256i mask = first_lanes(n - i);
    _mm256_maskstore_ps(x + i, mask, _mm256_mul_ps(_mm256_maskload_ps(x + i, mask), inv));
  }
}

void attention_weighted_sum_avx2(const float* const* w, int64_t n_queries, const float* values,
                                 const int64_t* n_keys, int64_t head_dim, float* const* out) {
  for (int64_t first = 0; first < n_queries; first += kMaxSharedQueries) {
    const int count = static_cast<int>(n_queries - first < kMaxSharedQueries ? n_queries - first
                                                                             : kMaxSharedQueries);
    // Up to 64 outputs (eight registers) per pass over the keys.
    for (int64_t d0 = 0; d0 < head_dim; d0 += 64) {
      const int64_t width = head_dim - d0 < 64 ? head_dim - d0 : 64;
      const int n_blocks = static_cast<int>((width + 7) / 8);
      const __m256i last_mask = first_lanes(width - 8 * (n_blocks - 1));
      const bool partial = width % 8 != 0;
      const float* const* wq = w + first;
      const int64_t* nq = n_keys + first;
      float* const* oq = out + first;
      const float* v = values + d0;
      switch (n_blocks * 2 + (partial ? 1 : 0)) {
#define AUGUR_BLOCK_CASE(NB)                                                                    \
  case 2 * NB: weighted_block<NB, false>(wq, count, v, nq, head_dim, last_mask, d0, oq); break; \
  case 2 * NB + 1: weighted_block<NB, true>(wq, count, v, nq, head_dim, last_mask, d0, oq); break;
        AUGUR_BLOCK_CASE(1)
        AUGUR_BLOCK_CASE(2)
        AUGUR_BLOCK_CASE(3)
        AUGUR_BLOCK_CASE(4)
        AUGUR_BLOCK_CASE(5)
        AUGUR_BLOCK_CASE(6)
        AUGUR_BLOCK_CASE(7)
        AUGUR_BLOCK_CASE(8)
#undef AUGUR_BLOCK_CASE
      }
    }
  }
}

#else

void attention_scores_avx2(const float* const*, int64_t, const float*, const int64_t*, int64_t,
                           float, float* const*) {}
void softmax_inplace_avx2(float*, int64_t) {}
void exp_nonpositive_avx2(const float*, int64_t, float*) {}
void attention_weighted_sum_avx2(const float* const*, int64_t, const float*, const int64_t*,
                                 int64_t, float* const*) {}

#endif

}  // namespace augur::kernels::detail
