// AVX-512 VNNI lanes for Q4_K/Q5_K/Q6_K weights times Q8_K activations under the shared K-quant
// tile kernel (kquant_tile_x86.h), bit-identical to the AVX2 path (and so to the scalar path and
// llama.cpp's AVX2 vec_dot_q{4,5,6}_K_q8_K).
//
// The tile kernel takes, per super-block and (weight row, activation row), eight exact int32 lanes
// (lane u: sub-block scale x weight code x activation code over elements 4u..4u+3 of every 32),
// then runs its float steps on them. Here one zmm holds two sub-blocks side by side (2p in the low
// 256 bits, 2p+1 in the high; Q6_K: quarters k and k+1), meeting the 64 contiguous activation
// codes of one zmm load; `vpdpwssd` does the AVX2 kernel's `madd` with the scale and the add in
// one instruction. The two halves are added at the end of the super-block: integer sums, exact in
// any order, so the lanes, and every float step after them, are the AVX2 path's.
// Compiled with AVX-512 flags and only called when cpu_supports(Isa::kAvx512), so it uses helpers
// with internal linkage only (docs/kernels.md, "ODR hazard").
// GCC 12 reports its own _mm512_undefined_*() inside inserti64x4 / broadcast_i32x4 as
// uninitialized once inlined: a known false positive (clang has no such warning group).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "common/error.h"
#include "kernels/kquant_tile_x86.h"
#include "kernels/matmul_kernels.h"
#include "kernels/x86_helpers.h"
#include "tensor/blocks.h"

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)
namespace {

using gguf::TensorType;

#define AUGUR_ALWAYS_INLINE inline __attribute__((always_inline))

AUGUR_ALWAYS_INLINE __m512i load512(const void* p) {
  return _mm512_loadu_si512(p);
}

AUGUR_ALWAYS_INLINE __m512i halves(__m256i low, __m256i high) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

// sumi[m] += the two 256-bit halves of wide[m]: the eight lanes of the super-block.
template <int TM>
AUGUR_ALWAYS_INLINE void add_folded(const __m512i* wide, __m256i* sumi) {
#pragma GCC unroll 8
  for (int m = 0; m < TM; ++m) {
    sumi[m] = _mm256_add_epi32(sumi[m], _mm256_add_epi32(_mm512_castsi512_si256(wide[m]),
                                                         _mm512_extracti64x4_epi64(wide[m], 1)));
  }
}

// int16 scale j in the low 256 bits and scale j + 1 in the high, from the 8 scales in every
// 128-bit lane of `scales`.
AUGUR_ALWAYS_INLINE __m512i scale_pair(__m512i scales, int j) {
  const auto pick = [](int k) { return static_cast<short>(((2 * k + 1) << 8) | (2 * k)); };
  return _mm512_shuffle_epi8(scales,
                             halves(_mm256_set1_epi16(pick(j)), _mm256_set1_epi16(pick(j + 1))));
}

// Q4_K: sub-block 2p is the low nibbles of qs[32p..32p+31], sub-block 2p+1 the high ones.
struct KQ4_K {
  static constexpr int kBytes = sizeof(tensor::BlockQ4_K);
  static constexpr bool kLaneMins = true, kScalarMins = false;
  template <int TM>
  AUGUR_ALWAYS_INLINE static void lanes(const uint8_t* b, const int8_t* x, int64_t ldx,
                                        __m128i scales128, __m256i* sumi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m512i scales = _mm512_broadcast_i32x4(scales128);
    __m512i wide[TM];
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) wide[m] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * p));
      const __m512i q =
          halves(_mm256_and_si256(bits, m4), _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4));
      const __m512i s = scale_pair(scales, 2 * p);
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) {
        const __m512i y = load512(x + m * ldx + 64 * p);
        wide[m] = _mm512_dpwssd_epi32(wide[m], s, _mm512_maddubs_epi16(q, y));
      }
    }
    add_folded<TM>(wide, sumi);
  }
};

// Q5_K: Q4_K's nibbles plus a fifth bit, bit j of qh[l] for element l of sub-block j (l < 32).
struct KQ5_K {
  static constexpr int kBytes = sizeof(tensor::BlockQ5_K);
  static constexpr bool kLaneMins = false, kScalarMins = true;
  template <int TM>
  AUGUR_ALWAYS_INLINE static void lanes(const uint8_t* b, const int8_t* x, int64_t ldx,
                                        __m128i scales128, __m256i* sumi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m512i scales = _mm512_broadcast_i32x4(scales128);
    __m512i wide[TM];
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) wide[m] = _mm512_setzero_si512();
    const __m256i hbits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 48 + 32 * p));
      const __m256i h_lo =
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p), one), 4);
      const __m256i h_hi =
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p + 1), one), 4);
      const __m512i q =
          halves(_mm256_or_si256(_mm256_and_si256(bits, m4), h_lo),
                 _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), h_hi));
      const __m512i s = scale_pair(scales, 2 * p);
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) {
        const __m512i y = load512(x + m * ldx + 64 * p);
        wide[m] = _mm512_dpwssd_epi32(wide[m], s, _mm512_maddubs_epi16(q, y));
      }
    }
    add_folded<TM>(wide, sumi);
  }
};

// Q6_K: per half h and quarter k (tensor/blocks.h), 32 unsigned 6-bit codes; (q - 32) * y is
// maddubs(q, y) - maddubs(32, y), exact in int16, as ggml does it. Quarters k and k + 1 share a
// zmm: their activations are contiguous.
struct KQ6_K {
  static constexpr int kBytes = sizeof(tensor::BlockQ6_K);
  static constexpr bool kLaneMins = false, kScalarMins = false;

  // The 32 codes of quarter k of half h, whose 64 low-bit bytes are ql0, ql1 and high bits qh.
  AUGUR_ALWAYS_INLINE static __m256i quarter(__m256i ql0, __m256i ql1, __m256i qh, int k) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    const __m256i low_src = (k & 1) ? ql1 : ql0;
    const __m256i low = _mm256_and_si256(k >> 1 ? _mm256_srli_epi16(low_src, 4) : low_src, m4);
    const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m3), 4);
    return _mm256_or_si256(low, high);
  }
  // int16 positions 0..7 (elements 0..15) of quarter k take scale 8h + 2k, 8..15 take 8h + 2k + 1.
  AUGUR_ALWAYS_INLINE static __m256i quarter_scale(__m128i scales, int i) {
    const __m128i pick = _mm_set_epi64x(0x0101010101010101LL * (i + 1), 0x0101010101010101LL * i);
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
  }

  template <int TM>
  AUGUR_ALWAYS_INLINE static void lanes(const uint8_t* b, const int8_t* x, int64_t ldx, __m128i,
                                        __m256i* sumi) {
    const __m512i m32 = _mm512_set1_epi8(32);
    __m512i wide[TM];
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) wide[m] = _mm512_setzero_si512();
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192));
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h));
      const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
#pragma GCC unroll 2
      for (int k = 0; k < 4; k += 2) {
        const __m512i q = halves(quarter(ql0, ql1, qh, k), quarter(ql0, ql1, qh, k + 1));
        const int i = 8 * h + 2 * k;
        const __m512i scale = halves(quarter_scale(scales, i), quarter_scale(scales, i + 2));
#pragma GCC unroll 8
        for (int m = 0; m < TM; ++m) {
          const __m512i y = load512(x + m * ldx + 128 * h + 32 * k);
          const __m512i prod =
              _mm512_sub_epi16(_mm512_maddubs_epi16(q, y), _mm512_maddubs_epi16(m32, y));
          wide[m] = _mm512_dpwssd_epi32(wide[m], scale, prod);
        }
      }
    }
    add_folded<TM>(wide, sumi);
  }
};

}  // namespace

void matmul_rows_kquant_avx512(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::Q4_K: return run_tiles<KQuantTiles<KQ4_K>>(a, row_begin, row_end);
    case TensorType::Q5_K: return run_tiles<KQuantTiles<KQ5_K>>(a, row_begin, row_end);
    case TensorType::Q6_K: return run_tiles<KQuantTiles<KQ6_K>>(a, row_begin, row_end);
    default: break;
  }
  AUGUR_CHECK(false, "matmul_rows_kquant_avx512 takes Q4_K, Q5_K and Q6_K only");
}

#undef AUGUR_ALWAYS_INLINE

#else  // not x86: isa.cpp never selects this path

void matmul_rows_kquant_avx512(const MatmulArgs&, int64_t, int64_t) {
  AUGUR_CHECK(false, "the AVX-512 path exists only on x86");
}

#endif

}  // namespace augur::kernels::detail
