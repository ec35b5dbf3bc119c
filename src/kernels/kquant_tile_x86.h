// The K-quant tile kernel of the x86 paths (matmul_avx2.cpp, matmul_kquant_avx512.cpp): llama.cpp's
// float steps for Q4_K/Q5_K/Q6_K weights on Q8_K activations, around the exact integer lanes that
// each path's K::lanes computes (docs/kernels.md, "Numerics"). Like x86_helpers.h everything has
// internal linkage, so each path compiles its own copy with its own flags ("ODR hazard").
//
// K: kBytes (bytes per super-block), kLaneMins (Q4_K: mins in four float lanes), kScalarMins
// (Q5_K: mins summed to one integer), and
//   template <int TM> static void lanes(const uint8_t* block, const int8_t* x, int64_t ldx,
//                                       __m128i scales, __m256i* sumi)
// adding to sumi[m] the eight int32 lanes of the super-block for activation row m (lane u:
// sub-block scale x weight code x activation code over elements 4u..4u+3 of every 32), from the 8
// int16 sub-block scales (Q4_K/Q5_K; unused for Q6_K, whose scales are in the block).
#pragma once

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstdint>

#include "kernels/matmul_kernels.h"
#include "kernels/x86_helpers.h"

namespace augur::kernels::detail {
namespace {

// 8 int16 scales (low 128 bits) and 8 int16 mins of a Q4_K/Q5_K super-block from its 12 packed
// bytes (tensor/blocks.h): the low 6 bits of bytes 0..3 and 4..7 for sub-blocks 0..3, a nibble of
// bytes 8..11 plus two high bits of bytes 0..3 / 4..7 for sub-blocks 4..7.
AUGUR_ALWAYS_INLINE void scales_and_mins(const uint8_t* packed, __m128i& scales, __m128i& mins) {
  uint32_t u[3];
  __builtin_memcpy(u, packed, 12);
  const uint32_t sc_lo = u[0] & 0x3f3f3f3fu, m_lo = u[1] & 0x3f3f3f3fu;
  const uint32_t sc_hi = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  const uint32_t m_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  scales = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)));
  mins = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(m_hi), static_cast<int>(m_lo)));
}

// y[m * ldy] = dot(weight row, Q8_K activation row m) for m < TM, in llama.cpp's AVX2 arithmetic
// (see matmul_scalar.cpp, kquant_tile_kernel, for the float steps). One weight row per tile: the
// float work is one FMA per super-block and pair, so more rows would add no useful parallelism.
template <class K, int TM, int NR>
void kquant_tile_kernel(const uint8_t* w, int64_t cols, const int8_t* xq, const float* xd,
                        const int16_t* xbsums, int64_t ldx, float* y, int64_t ldy) {
  static_assert(NR == 1, "K-quant tiles take one weight row");
  __m256 acc[TM];
  __m128 acc_m[TM];
  float summs[TM];
#pragma GCC unroll 8
  for (int m = 0; m < TM; ++m) {
    acc[m] = _mm256_setzero_ps();
    acc_m[m] = _mm_setzero_ps();
    summs[m] = 0.0f;
  }
  const int64_t blocks = cols / 256, ldd = ldx / 256, ldb = ldx / 16;
  for (int64_t s = 0; s < blocks; ++s) {
    const uint8_t* b = w + K::kBytes * s;
    prefetch_ahead(b);
    prefetch_ahead(b + 64);
    prefetch_ahead(b + 128);
    __m128i scales = _mm_setzero_si128(), mins = _mm_setzero_si128();
    if constexpr (K::kLaneMins || K::kScalarMins) scales_and_mins(b + 4, scales, mins);
    __m256i sumi[TM];
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) sumi[m] = _mm256_setzero_si256();
    K::template lanes<TM>(b, xq + 256 * s, ldx, scales, sumi);
    const float wd = half_to_float(b + (K::kLaneMins || K::kScalarMins ? 0 : 208));
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) {
      const float yd = xd[m * ldd + s];
      const float d = yd * wd;
      acc[m] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[m]), acc[m]);
      if constexpr (K::kLaneMins || K::kScalarMins) {
        const float dmin = -yd * half_to_float(b + 2);
        const int16_t* bs = xbsums + m * ldb + 16 * s;
        const __m128i q8s =
            _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bs)),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(bs + 8)));
        const __m128i prod = _mm_madd_epi16(mins, q8s);
        if constexpr (K::kLaneMins) {
          acc_m[m] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m[m]);
        } else {
          const __m128i pair = _mm_add_epi32(prod, _mm_unpackhi_epi64(prod, prod));
          const int isum = _mm_cvtsi128_si32(_mm_add_epi32(pair, _mm_shuffle_epi32(pair, 1)));
          summs[m] = __builtin_fmaf(dmin, static_cast<float>(isum), summs[m]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < TM; ++m) {
    float sum = hsum(acc[m]);
    if constexpr (K::kLaneMins) {
      __m128 am = _mm_add_ps(acc_m[m], _mm_movehl_ps(acc_m[m], acc_m[m]));
      am = _mm_add_ss(am, _mm_movehdup_ps(am));
      sum += _mm_cvtss_f32(am);
    } else if constexpr (K::kScalarMins) {
      sum += summs[m];
    }
    y[m * ldy] = sum;
  }
}

template <class K>
struct KQuantTiles {
  static constexpr int kMaxTm = 8;
  static constexpr int rows_for(int) { return 1; }
  template <int TM, int NR>
  static void tile(const MatmulArgs& a, int64_t row, int64_t m0) {
    kquant_tile_kernel<K, TM, NR>(a.w + row * static_cast<int64_t>(a.row_bytes), a.cols,
                                  a.xq + m0 * a.cols, a.xd + m0 * (a.cols / 256),
                                  a.xbsums + m0 * (a.cols / 16), a.cols, a.y + m0 * a.rows + row,
                                  a.rows);
  }
};

}  // namespace
}  // namespace augur::kernels::detail

#endif
