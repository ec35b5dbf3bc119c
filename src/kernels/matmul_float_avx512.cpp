// AVX-512 matmul for float weights (F32/F16/BF16), called by matmul_rows_avx512.
//
// Bit-identical to the AVX2 float kernel (matmul_avx2.cpp, float_tile_kernel): a zmm register
// holds TWO weight rows' eight lanes (row a in lanes 0-7, row b in lanes 8-15) for one activation
// row, whose 8 columns are broadcast to both halves. Each (weight row, activation row) pair thus
// keeps the AVX2 kernel's eight float lanes and its one FMA chain over 8 columns at a time in
// column order; the columns after the last whole 8 are added singly by an explicit FMA into a
// separate sum, and the lanes are summed at the end in the same hsum order, plus that sum. Weights
// are decoded exactly (F16 by vcvtph2ps, BF16 by moving the 16 bits into the high half).
// Compiled with AVX-512 flags and only called when cpu_supports(Isa::kAvx512) (kAvx512 or kAmx),
// so like matmul_avx2.cpp it uses file-local helpers only (see docs/kernels.md, "ODR hazard").
// GCC 12 reports its own _mm512_undefined_*() (`__m512i __Y = __Y;`, used by inserti64x4,
// broadcast_f32x8, ...) as uninitialized once inlined: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "kernels/x86_helpers.h"

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)
namespace {

using gguf::TensorType;

#define AUGUR_ALWAYS_INLINE inline __attribute__((always_inline))

// Decoders of columns c..c+7 of two weight rows a and b: row a in lanes 0-7, row b in 8-15.
struct PairF32 {
  static constexpr int kStepBytes = 128;  // bytes of weights per 32-element step (for prefetch)
  AUGUR_ALWAYS_INLINE static __m512 decode8x2(const uint8_t* a, const uint8_t* b, int64_t c) {
    const __m256 wa = _mm256_loadu_ps(reinterpret_cast<const float*>(a) + c);
    const __m256 wb = _mm256_loadu_ps(reinterpret_cast<const float*>(b) + c);
    return _mm512_insertf32x8(_mm512_castps256_ps512(wa), wb, 1);
  }
  AUGUR_ALWAYS_INLINE static float decode1(const uint8_t* row, int64_t c) {
    float v;
    __builtin_memcpy(&v, row + 4 * c, 4);
    return v;
  }
};

struct PairF16 {
  static constexpr int kStepBytes = 64;
  AUGUR_ALWAYS_INLINE static __m512 decode8x2(const uint8_t* a, const uint8_t* b, int64_t c) {
    const __m128i ha = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 2 * c));
    const __m128i hb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * c));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(ha), hb, 1));
  }
  AUGUR_ALWAYS_INLINE static float decode1(const uint8_t* row, int64_t c) {
    return _cvtsh_ss(load_u16(row + 2 * c));
  }
};

struct PairBF16 {
  static constexpr int kStepBytes = 64;
  AUGUR_ALWAYS_INLINE static __m512 decode8x2(const uint8_t* a, const uint8_t* b, int64_t c) {
    const __m128i ha = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 2 * c));
    const __m128i hb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * c));
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(ha), hb, 1);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  AUGUR_ALWAYS_INLINE static float decode1(const uint8_t* row, int64_t c) {
    const uint32_t bits = static_cast<uint32_t>(load_u16(row + 2 * c)) << 16;
    float v;
    __builtin_memcpy(&v, &bits, 4);
    return v;
  }
};

// The final lane sums of all NP x TM accumulators at once: each chain's eight lanes l0..l7 are
// added as the AVX2 kernel's hsum adds them, ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)),
// same operands in the same order, then plus its tail; chain (r, m)'s tail and result are at
// slot(r, m). Many chains share each instruction (16 chains: 14 shuffles and 8 adds, where an hsum
// per chain costs about 6 instructions). Accumulator i = m * NP + p holds rows 2p, 2p+1 of
// activation row m.
// 1. S[j] from accumulators 2j, 2j+1: 128-bit quarter q holds l_k + l_{k+4}, k = 0..3, of the
//    chains A.lo, A.hi, B.lo, B.hi (q = 0..3);
// 2. T[k] from S[2k], S[2k+1]: per quarter (s0 + s2, s1 + s3) of each;
// 3. R[n] from T[2n], T[2n+1]: per quarter, element e is t0 + t1 of the chain that quarter held in
//    S[4n + e].
template <int NP, int TM>
struct Reduced {
  static constexpr int kAcc = NP * TM, kS = (kAcc + 1) / 2, kT = (kS + 1) / 2, kR = (kT + 1) / 2;
  static constexpr int kFloats = 16 * kR;
  // Where chain (weight row r, activation row m) ends up in out.
  static constexpr int slot(int r, int m) {
    const int i = m * NP + r / 2;  // accumulator
    const int j = i / 2;           // its S
    return 16 * (j / 4) + 4 * (2 * (i % 2) + r % 2) + j % 4;
  }
  AUGUR_ALWAYS_INLINE static void sum_lanes(const __m512 (&acc)[NP][TM], const float* tail,
                                            float* out) {
    const __m512 zero = _mm512_setzero_ps();
    __m512 sv[2 * kT];
#pragma GCC unroll 32
    for (int j = 0; j < 2 * kT; ++j) {
      if (2 * j >= kAcc) {
        sv[j] = zero;
        continue;
      }
      const __m512 a = acc[(2 * j) % NP][(2 * j) / NP];
      const __m512 b = 2 * j + 1 < kAcc ? acc[(2 * j + 1) % NP][(2 * j + 1) / NP] : zero;
      sv[j] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
    }
    __m512 tv[2 * kR];
#pragma GCC unroll 32
    for (int k = 0; k < 2 * kR; ++k) {
      if (k >= kT) {
        tv[k] = zero;
        continue;
      }
      tv[k] = _mm512_add_ps(_mm512_shuffle_ps(sv[2 * k], sv[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_ps(sv[2 * k], sv[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
#pragma GCC unroll 32
    for (int n = 0; n < kR; ++n) {
      const __m512 r =
          _mm512_add_ps(_mm512_shuffle_ps(tv[2 * n], tv[2 * n + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                        _mm512_shuffle_ps(tv[2 * n], tv[2 * n + 1], _MM_SHUFFLE(3, 1, 3, 1)));
      _mm512_store_ps(out + 16 * n, _mm512_add_ps(r, _mm512_load_ps(tail + 16 * n)));
    }
  }
};

// y[m * ldy + r] = dot(weight row r, x[m * ldx ..]) for r < NR, m < TM, as the AVX2 float kernel
// computes it: per (r, m) pair one FMA chain over eight lanes fed 8 columns at a time in column
// order, then the remaining columns one by one (explicit FMA) into `tail`, then hsum + tail. Row
// pair p holds rows 2p and 2p+1; an odd NR's last pair repeats its row and drops the copy. Every
// pair is reduced in the same order whatever TM and NR are, so the result is batch-invariant and
// equals the AVX2 kernel's. The column loop is outside (as there): each 8-column slice of the TM
// activation rows is loaded once, broadcast to both halves, and meets the NR weight rows.
template <class D, int TM, int NR>
void float_tile_kernel(const uint8_t* w0, size_t row_bytes, int64_t cols, const float* x,
                       int64_t ldx, float* y, int64_t ldy) {
  constexpr int NP = (NR + 1) / 2;
  __m512 acc[NP][TM];
#pragma GCC unroll 16
  for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 16
    for (int m = 0; m < TM; ++m) acc[p][m] = _mm512_setzero_ps();
  }
  const auto row_a = [&](int p) __attribute__((always_inline)) {
    return w0 + 2 * p * row_bytes;
  };
  const auto row_b = [&](int p) __attribute__((always_inline)) {
    return w0 + (2 * p + 1 < NR ? 2 * p + 1 : 2 * p) * row_bytes;
  };
  const auto slice = [&](int64_t c) __attribute__((always_inline)) {
    const auto xb = [&](int m) __attribute__((always_inline)) {
      return _mm512_broadcast_f32x8(_mm256_loadu_ps(x + m * ldx + c));
    };
    if constexpr (NP <= TM) {
      // The weight pairs decoded first, then each activation slice meets them all.
      __m512 wv[NP];
#pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) wv[p] = D::decode8x2(row_a(p), row_b(p), c);
#pragma GCC unroll 16
      for (int m = 0; m < TM; ++m) {
        const __m512 xv = xb(m);
#pragma GCC unroll 16
        for (int p = 0; p < NP; ++p) acc[p][m] = _mm512_fmadd_ps(wv[p], xv, acc[p][m]);
      }
    } else {
      __m512 xv[TM];
#pragma GCC unroll 16
      for (int m = 0; m < TM; ++m) xv[m] = xb(m);
#pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) {
        const __m512 wv = D::decode8x2(row_a(p), row_b(p), c);
#pragma GCC unroll 16
        for (int m = 0; m < TM; ++m) acc[p][m] = _mm512_fmadd_ps(wv, xv[m], acc[p][m]);
      }
    }
  };
  const int64_t steps = cols / 32;
  for (int64_t s = 0; s < steps; ++s) {
    // Below eight activation rows the hardware prefetcher streams the rows faster alone (paired
    // runs on AMD EPYC Zen 4, zoo-wide's F16 layer matrices, 2 threads: M = 1-6 in 0.94-0.98x the
    // time without these prefetches, M = 8 in 1.01x).
    if constexpr (TM >= 8) {
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) prefetch_ahead(w0 + r * row_bytes + D::kStepBytes * s);
    }
#pragma GCC unroll 16
    for (int k = 0; k < 4; ++k) slice(32 * s + 8 * k);
  }
  int64_t c = steps * 32;
  for (; c + 8 <= cols; c += 8) slice(c);
  // Columns after the last whole 8, one by one, into each pair's slot of the reduced results.
  alignas(64) float tail[Reduced<NP, TM>::kFloats] = {};
  for (; c < cols; ++c) {
    for (int r = 0; r < NR; ++r) {
      const float wc = D::decode1(w0 + r * row_bytes, c);
      // Explicit, as in the AVX2 kernel: the compiler must not decide per instantiation.
      for (int m = 0; m < TM; ++m) {
        float& t = tail[Reduced<NP, TM>::slot(r, m)];
        t = __builtin_fmaf(wc, x[m * ldx + c], t);
      }
    }
  }
  alignas(64) float out[Reduced<NP, TM>::kFloats];
  Reduced<NP, TM>::sum_lanes(acc, tail, out);
#pragma GCC unroll 16
  for (int m = 0; m < TM; ++m) {
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) y[m * ldy + r] = out[Reduced<NP, TM>::slot(r, m)];
  }
}

// Weight rows per block for a tile of `tm` activation rows (two rows per zmm register): the
// NR / 2 x TM accumulators, the decoded weight pairs (or the activations, whichever are fewer) and
// one more register fit the 32 zmm registers. Activation rows per tile: 8, so a verify of up to 8
// rows streams the weights once. Measured (F16, one thread, docs/kernels.md): 6 rows for tiles
// of 7-8 beat 4 by 5-10 % at M >= 8 (fewer activation loads per FMA); 4 or 12 rows for a single
// activation row, or tiles of 6 or 12, were not faster.
constexpr int float_rows_for(int tm) {
  return tm <= 6 ? 8 : 6;
}
inline constexpr int kFloatTileRows = 8;

template <class D>
struct FloatTiles {
  static constexpr int kMaxTm = kFloatTileRows;
  static constexpr int rows_for(int tm) { return float_rows_for(tm); }
  template <int TM, int NR>
  static void tile(const MatmulArgs& a, int64_t row, int64_t m0) {
    float_tile_kernel<D, TM, NR>(a.w + row * static_cast<int64_t>(a.row_bytes), a.row_bytes, a.cols,
                                 a.x + m0 * a.cols, a.cols, a.y + m0 * a.rows + row, a.rows);
  }
};

}  // namespace

void matmul_rows_float_avx512(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::F32: return run_tiles<FloatTiles<PairF32>>(a, row_begin, row_end);
    case TensorType::F16: return run_tiles<FloatTiles<PairF16>>(a, row_begin, row_end);
    case TensorType::BF16: return run_tiles<FloatTiles<PairBF16>>(a, row_begin, row_end);
    default: break;
  }
  AUGUR_CHECK(false, "matmul_rows_float_avx512 takes F32, F16 and BF16 weights only");
}

#undef AUGUR_ALWAYS_INLINE

#else  // not x86: isa.cpp never selects this path

void matmul_rows_float_avx512(const MatmulArgs&, int64_t, int64_t) {
  AUGUR_CHECK(false, "the AVX-512 path exists only on x86");
}

#endif

}  // namespace augur::kernels::detail
