// AVX-512 VNNI matmul path: Q8_0/Q4_0 weights times Q8_0 activations with `vpdpbusd` on 512-bit
// registers; F32/F16/BF16 run matmul_rows_float_avx512, the K-quants matmul_rows_kquant_avx512,
// Q5_0 matmul_rows_avx2.
//
// Bit-identical to the AVX2 and scalar paths: a zmm register holds TWO weight rows' eight lanes
// (row a in lanes 0-7, row b in lanes 8-15) for one activation row, so each (weight row,
// activation row) pair keeps the AVX2 kernel's eight float lanes and its one FMA chain in block
// order (acc = fma(dw * dx, sums, acc)), and the lanes are summed at the end in the same hsum
// order. The integer lane sums are exact either way (`maddubs` + `madd` there, `vpdpbusd` here).
// Compiled with AVX-512 flags and only called when cpu_supports(Isa::kAvx512) (kAvx512 or kAmx), so
// like matmul_avx2.cpp it uses file-local helpers only (see docs/kernels.md, "ODR hazard"). GCC 12
// reports its own _mm512_undefined_*() (`__m512i __Y = __Y;`, used by inserti64x4, broadcast_i64x4,
// cvtepi32_ps, ...) as uninitialized once inlined: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "kernels/x86_helpers.h"
#include "tensor/blocks.h"

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)
namespace {

using gguf::TensorType;

#define AUGUR_ALWAYS_INLINE inline __attribute__((always_inline))

// Integer decoders of block s of two weight rows a and b: 64 signed codes, row a's 32 in bytes
// 0..31 and row b's in bytes 32..63.
struct PairQ8_0 {
  AUGUR_ALWAYS_INLINE static const uint8_t* block(const uint8_t* row, int64_t s) {
    return row + sizeof(tensor::BlockQ8_0) * s;
  }
  AUGUR_ALWAYS_INLINE static __m512i codes(const uint8_t* a, const uint8_t* b) {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2));
    const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    return _mm512_inserti64x4(_mm512_castsi256_si512(qa), qb, 1);
  }
};

struct PairQ4_0 {
  AUGUR_ALWAYS_INLINE static const uint8_t* block(const uint8_t* row, int64_t s) {
    return row + sizeof(tensor::BlockQ4_0) * s;
  }
  // Low nibbles are elements 0..15, high nibbles 16..31; minus 8.
  AUGUR_ALWAYS_INLINE static __m512i codes(const uint8_t* a, const uint8_t* b) {
    const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 2));
    const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    // 128-bit lanes [pa, pa, pb, pb]; the odd lanes take the high nibbles.
    const __m512i spread =
        _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3),
                                 _mm512_castsi256_si512(_mm256_set_m128i(pb, pa)));
    const __m512i shifted = _mm512_srlv_epi64(spread, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
    return _mm512_sub_epi8(_mm512_and_si512(shifted, _mm512_set1_epi8(0x0F)), _mm512_set1_epi8(8));
  }
};

// Weight rows per block for a tile of `tm` activation rows (two rows per zmm chain): 8 or 16
// accumulators, with room for the codes, masks and scales in the 32 zmm registers.
constexpr int rows_for(int tm) {
  return tm <= 2 ? 8 : 4;
}

// y[m * ldy + r] = dot(weight row r, Q8_0 activation row m) for r < NR, m < TM: per block,
// vpdpbusd(|q|, x with q's sign) gives the exact int32 sums of elements 4j..4j+3 for both rows of
// a pair (lanes j and 8 + j), which become floats and are accumulated as
// acc = fma(dw * dx, sums, acc). Row pair p holds rows 2p and 2p+1; an odd NR's last pair repeats
// its row and drops the copy. One chain per (row, m) in block order whatever TM and NR are, so
// the result is batch-invariant and equals the AVX2 kernel's.
template <class C, int TM, int NR>
void int_tile_kernel(const uint8_t* w0, size_t row_bytes, int64_t cols, const int8_t* xq,
                     const float* xd, int64_t ldx, float* y, int64_t ldy) {
  constexpr int NP = (NR + 1) / 2;
  __m512 acc[NP][TM];
#pragma GCC unroll 4
  for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) acc[p][m] = _mm512_setzero_ps();
  }
  const int64_t blocks = cols / 32, ldd = ldx / 32;
  for (int64_t s = 0; s < blocks; ++s) {
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const int rb = 2 * p + 1 < NR ? 2 * p + 1 : 2 * p;
      const uint8_t* block_a = C::block(w0 + 2 * p * row_bytes, s);
      const uint8_t* block_b = C::block(w0 + rb * row_bytes, s);
      prefetch_ahead(block_a);
      if (rb != 2 * p) prefetch_ahead(block_b);
      const __m512i q = C::codes(block_a, block_b);
      const __m512i magnitude = _mm512_abs_epi8(q);  // |q| as unsigned bytes (-128 gives 128)
      const __mmask64 negative = _mm512_movepi8_mask(q);
      const __m512 dw = _mm512_insertf32x8(_mm512_set1_ps(half_to_float(block_a)),
                                           _mm256_set1_ps(half_to_float(block_b)), 1);
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) {
        // The activation block in both halves, negated where q < 0: |q| * that = q * x.
        const __m512i x = _mm512_broadcast_i64x4(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + m * ldx + 32 * s)));
        const __m512i signed_x = _mm512_mask_sub_epi8(x, negative, _mm512_setzero_si512(), x);
        const __m512 sums =
            _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), magnitude, signed_x));
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(xd[m * ldd + s]));
        acc[p][m] = _mm512_fmadd_ps(d, sums, acc[p][m]);
      }
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) {
      y[m * ldy + 2 * p] = hsum(_mm512_castps512_ps256(acc[p][m]));
      if (2 * p + 1 < NR) y[m * ldy + 2 * p + 1] = hsum(_mm512_extractf32x8_ps(acc[p][m], 1));
    }
  }
}

template <class C>
struct IntTiles {
  static constexpr int kMaxTm = 8;
  static constexpr int rows_for(int tm) { return detail::rows_for(tm); }
  template <int TM, int NR>
  static void tile(const MatmulArgs& a, int64_t row, int64_t m0) {
    int_tile_kernel<C, TM, NR>(a.w + row * static_cast<int64_t>(a.row_bytes), a.row_bytes, a.cols,
                               a.xq + m0 * a.cols, a.xd + m0 * (a.cols / 32), a.cols,
                               a.y + m0 * a.rows + row, a.rows);
  }
};

}  // namespace

void matmul_rows_avx512(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::Q8_0: return run_tiles<IntTiles<PairQ8_0>>(a, row_begin, row_end);
    case TensorType::Q4_0: return run_tiles<IntTiles<PairQ4_0>>(a, row_begin, row_end);
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16: return matmul_rows_float_avx512(a, row_begin, row_end);
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: return matmul_rows_kquant_avx512(a, row_begin, row_end);
    default: return matmul_rows_avx2(a, row_begin, row_end);
  }
}

#undef AUGUR_ALWAYS_INLINE

#else  // not x86: isa.cpp never selects this path

void matmul_rows_avx512(const MatmulArgs&, int64_t, int64_t) {
  AUGUR_CHECK(false, "the AVX-512 path exists only on x86");
}

#endif

}  // namespace augur::kernels::detail
