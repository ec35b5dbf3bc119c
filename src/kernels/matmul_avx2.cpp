// AVX2 + FMA + F16C matmul path, three kernels:
// - F32/F16/BF16 (float_tile_kernel): 8 columns of up to 3 activation rows meet up to 4 weight
//   rows decoded 8 at a time (F16 via vcvtph2ps), one FMA chain per (weight row, activation row);
// - Q8_0/Q4_0 (int_tile_kernel): llama.cpp's integer dot products on Q8_0 activations;
// - Q4_K/Q6_K (tile_kernel): 32 weights decoded per step with their scales applied exactly as
//   ggml's reference dequantizer does, then FMA into a tile of up to 8 activation rows.
// Compiled with -mavx2 -mfma -mf16c -mbmi2 and only called when the CPU has them, so this file
// uses no inline function or template shared with other files (those could be kept by the linker
// for everyone): helpers are file-local and std:: headers are avoided.
#include <immintrin.h>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "tensor/blocks.h"

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)
namespace {

using gguf::TensorType;

// Decoders must melt into the tile loop so their four results stay in registers.
#define AUGUR_ALWAYS_INLINE inline __attribute__((always_inline))

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return v;
}

inline float half_to_float(const uint8_t* p) {
  return _cvtsh_ss(load_u16(p));
}

// Eight int8 (the low 8 bytes of `bytes`) to floats, exactly.
AUGUR_ALWAYS_INLINE __m256 widen_i8(__m128i bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
}

// Keeps a product rounded on its own so a following subtraction is not fused into an FMA: the
// decoded weight must equal ggml's two-rounding (d*sc)*q - dmin*m.
AUGUR_ALWAYS_INLINE __m256 rounded(__m256 v) {
  asm("" : "+x"(v));
  return v;
}

// Weights are read once per step from a matrix far larger than L2, in row blocks that advance
// together through contiguous memory; asking for the bytes 8 KB ahead keeps the hardware
// prefetcher's stream ahead of the kernel (measured +25 % decode on zoo q8_0, 2 threads; 1-4 KB
// ahead gain less).
AUGUR_ALWAYS_INLINE void prefetch_ahead(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + 8192, _MM_HINT_T0);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

struct DecodeF32 {
  static constexpr int kStepBytes = 128;  // bytes of weights per 32-element step (for prefetch)
  AUGUR_ALWAYS_INLINE static __m256 decode8(const uint8_t* row, int64_t c) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c);
  }
  AUGUR_ALWAYS_INLINE static float decode1(const uint8_t* row, int64_t c) {
    float v;
    __builtin_memcpy(&v, row + 4 * c, 4);
    return v;
  }
};

struct DecodeF16 {
  static constexpr int kStepBytes = 64;
  AUGUR_ALWAYS_INLINE static __m256 decode8(const uint8_t* row, int64_t c) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c)));
  }
  AUGUR_ALWAYS_INLINE static float decode1(const uint8_t* row, int64_t c) {
    return half_to_float(row + 2 * c);
  }
};

struct DecodeBF16 {
  static constexpr int kStepBytes = 64;
  AUGUR_ALWAYS_INLINE static __m256 decode8(const uint8_t* row, int64_t c) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  AUGUR_ALWAYS_INLINE static float decode1(const uint8_t* row, int64_t c) {
    const uint32_t bits = static_cast<uint32_t>(load_u16(row + 2 * c)) << 16;
    float v;
    __builtin_memcpy(&v, &bits, 4);
    return v;
  }
};

// Step s is sub-block s % 8 of super-block s / 8 (layout in tensor/blocks.h).
struct DecodeQ4_K {
  static constexpr int kStepBytes = sizeof(tensor::BlockQ4_K) / 8;
  // d1 * nibble - m1 for the eight nibbles in the low bytes of `bytes`.
  AUGUR_ALWAYS_INLINE static __m256 scale_nibbles(__m128i bytes, __m256 d1, __m256 m1) {
    const __m256 nib = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    return _mm256_sub_ps(rounded(_mm256_mul_ps(d1, nib)), m1);
  }
  AUGUR_ALWAYS_INLINE static void decode(const uint8_t* row, int64_t s, __m256* w) {
    const uint8_t* block = row + sizeof(tensor::BlockQ4_K) * (s / 8);
    const int sub = static_cast<int>(s % 8);
    const uint8_t* scales = block + 4;
    uint8_t sc, m;
    if (sub < 4) {
      sc = scales[sub] & 63;
      m = scales[sub + 4] & 63;
    } else {
      sc = static_cast<uint8_t>((scales[sub + 4] & 0xF) | ((scales[sub - 4] >> 6) << 4));
      m = static_cast<uint8_t>((scales[sub + 4] >> 4) | ((scales[sub] >> 6) << 4));
    }
    const __m256 d1 = _mm256_set1_ps(half_to_float(block) * static_cast<float>(sc));
    const __m256 m1 = _mm256_set1_ps(half_to_float(block + 2) * static_cast<float>(m));
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16 + 32 * (sub / 2)));
    if (sub % 2) q = _mm256_srli_epi16(q, 4);
    q = _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    w[0] = scale_nibbles(lo, d1, m1);
    w[1] = scale_nibbles(_mm_srli_si128(lo, 8), d1, m1);
    w[2] = scale_nibbles(hi, d1, m1);
    w[3] = scale_nibbles(_mm_srli_si128(hi, 8), d1, m1);
  }
};

// Step s is part p = s % 8 of super-block s / 8: half p / 4, quarter k = p % 4 (tensor/blocks.h).
struct DecodeQ6_K {
  static constexpr int kStepBytes = sizeof(tensor::BlockQ6_K) / 8;
  AUGUR_ALWAYS_INLINE static void decode(const uint8_t* row, int64_t s, __m256* w) {
    const uint8_t* block = row + sizeof(tensor::BlockQ6_K) * (s / 8);
    const int part = static_cast<int>(s % 8);
    const int half = part / 4, k = part % 4;
    const uint8_t* ql = block + 64 * half + 32 * (k & 1);
    const uint8_t* qh = block + 128 + 32 * half;
    const auto* sc = reinterpret_cast<const int8_t*>(block + 192) + 8 * half + 2 * k;
    const float d = half_to_float(block + 208);
    __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    if (k >> 1) low = _mm256_srli_epi16(low, 4);
    low = _mm256_and_si256(low, _mm256_set1_epi8(0x0F));
    __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
    high = _mm256_and_si256(_mm256_srl_epi16(high, _mm_cvtsi32_si128(2 * k)), _mm256_set1_epi8(3));
    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)),
                                      _mm256_set1_epi8(32));           // -32..31
    const __m256 ds0 = _mm256_set1_ps(d * static_cast<float>(sc[0]));  // elements 0..15
    const __m256 ds1 = _mm256_set1_ps(d * static_cast<float>(sc[1]));  // elements 16..31
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    w[0] = _mm256_mul_ps(widen_i8(lo), ds0);
    w[1] = _mm256_mul_ps(widen_i8(_mm_srli_si128(lo, 8)), ds0);
    w[2] = _mm256_mul_ps(widen_i8(hi), ds1);
    w[3] = _mm256_mul_ps(widen_i8(_mm_srli_si128(hi, 8)), ds1);
  }
};

// Weight rows per block for a tile of `tm` activation rows: enough independent FMA chains
// (latency 4, two ports: about 8 in flight) within the 16 ymm registers.
constexpr int rows_for(int tm) {
  return tm <= 2 ? 4 : tm <= 4 ? 2 : 1;
}

// y[m * ldy + r] = dot(weight row r, x[m * ldx ..]) for r < NR, m < TM.
// Each (r, m) pair has ONE accumulator chain fed in the same order (the 32 columns of a step as
// four FMAs, then the next step) whatever TM and NR are: a row's dot product is bitwise the same
// for every M, so verifying k+1 rows gives the logits k+1 single-row decodes give
// (tests/model/batch_invariance_test.cpp). Speculative greedy output then equals AR output by
// construction, not by luck of rounding. The parallelism comes from the NR x TM chains.
template <class D, int TM, int NR>
void tile_kernel(const uint8_t* w0, size_t row_bytes, int64_t cols, const float* x, int64_t ldx,
                 float* y, int64_t ldy) {
  __m256 acc[NR][TM];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const int64_t steps = cols / 32;
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      __m256 w[4];
      prefetch_ahead(w0 + r * row_bytes + D::kStepBytes * s);
      D::decode(w0 + r * row_bytes, s, w);
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) {
        const float* xm = x + m * ldx + 32 * s;
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          acc[r][m] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(xm + 8 * k), acc[r][m]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) y[m * ldy + r] = hsum(acc[r][m]);
  }
}

// Integer decoders of Q8_0/Q4_0 blocks: the 32 codes of block s as signed bytes, and the scale.
struct CodesQ8_0 {
  AUGUR_ALWAYS_INLINE static const uint8_t* block(const uint8_t* row, int64_t s) {
    return row + sizeof(tensor::BlockQ8_0) * s;
  }
  AUGUR_ALWAYS_INLINE static __m256i codes(const uint8_t* block) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
  }
};

struct CodesQ4_0 {
  AUGUR_ALWAYS_INLINE static const uint8_t* block(const uint8_t* row, int64_t s) {
    return row + sizeof(tensor::BlockQ4_0) * s;
  }
  // Low nibbles are elements 0..15, high nibbles 16..31; minus 8.
  AUGUR_ALWAYS_INLINE static __m256i codes(const uint8_t* block) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    return _mm256_sub_epi8(_mm256_and_si256(both, _mm256_set1_epi8(0x0F)), _mm256_set1_epi8(8));
  }
};

// y[m * ldy + r] = dot(weight row r, Q8_0 activation row m) for r < NR, m < TM, as llama.cpp's
// AVX2 vec_dot_q8_0_q8_0 / vec_dot_q4_0_q8_0 compute it: per block, eight exact int32 lane sums
// (lane j = elements 4j..4j+3) become floats and are accumulated as acc = fma(dw * dx, sums, acc);
// the eight lanes are summed once at the end. One chain per (r, m) pair in block order, whatever
// TM and NR are, so the result is batch-invariant like the float kernel's.
template <class C, int TM, int NR>
void int_tile_kernel(const uint8_t* w0, size_t row_bytes, int64_t cols, const int8_t* xq,
                     const float* xd, int64_t ldx, float* y, int64_t ldy) {
  __m256 acc[NR][TM];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t blocks = cols / 32, ldd = ldx / 32;
  for (int64_t s = 0; s < blocks; ++s) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const uint8_t* block = C::block(w0 + r * row_bytes, s);
      prefetch_ahead(block);
      const __m256i q = C::codes(block);
      const __m256i magnitude = _mm256_sign_epi8(q, q);  // |q| as unsigned bytes
      const __m256 dw = _mm256_set1_ps(half_to_float(block));
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) {
        const __m256i x =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + m * ldx + 32 * s));
        // |q| * (x with q's sign) = q * x; pairs of products fit int16 (|q|, |x| <= 128, 127).
        const __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(x, q));
        const __m256 sums = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        const __m256 d = _mm256_mul_ps(dw, _mm256_broadcast_ss(xd + m * ldd + s));
        acc[r][m] = _mm256_fmadd_ps(d, sums, acc[r][m]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) y[m * ldy + r] = hsum(acc[r][m]);
  }
}

// Float weights (F32/F16/BF16): the same one-chain-per-pair order as tile_kernel (8 columns at a
// time, in column order, then single columns), but with the column loop outside: each 8-column
// slice of the TM activation rows is loaded once into registers and meets NR weight rows, so an
// FMA needs under one load and the tile runs at FMA throughput (prefill); tile_kernel instead
// reloads activations per weight row. Same sums in the same order, so bitwise the same results.
template <class D, int TM, int NR>
void float_tile_kernel(const uint8_t* w0, size_t row_bytes, int64_t cols, const float* x,
                       int64_t ldx, float* y, int64_t ldy) {
  __m256 acc[NR][TM];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const auto slice = [&](int64_t c) __attribute__((always_inline)) {
    __m256 xv[TM];
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) xv[m] = _mm256_loadu_ps(x + m * ldx + c);
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const __m256 wv = D::decode8(w0 + r * row_bytes, c);
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) acc[r][m] = _mm256_fmadd_ps(wv, xv[m], acc[r][m]);
    }
  };
  const int64_t steps = cols / 32;
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) prefetch_ahead(w0 + r * row_bytes + D::kStepBytes * s);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) slice(32 * s + 8 * k);
  }
  int64_t c = steps * 32;
  for (; c + 8 <= cols; c += 8) slice(c);
  float tail[NR][TM] = {};
  for (; c < cols; ++c) {
    for (int r = 0; r < NR; ++r) {
      const float wc = D::decode1(w0 + r * row_bytes, c);
      // An explicit FMA: left to itself the compiler fuses this in some instantiations and not
      // in others, and a row's result would then depend on its block size (batch invariance).
      for (int m = 0; m < TM; ++m) tail[r][m] = __builtin_fmaf(wc, x[m * ldx + c], tail[r][m]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) y[m * ldy + r] = hsum(acc[r][m]) + tail[r][m];
  }
}

// Weight rows per block for the float kernel (TM <= kFloatTileRows): NR x TM accumulators plus TM
// activation registers and one weight register within the 16 ymm registers.
constexpr int float_rows_for(int tm) {
  return tm <= 2 ? 4 : 3;
}
// Activation rows per float tile: 3 x 3 is 9 FMAs for 6 loads. Measured on zoo shapes (F16, one
// thread): 0.83 ns per (row, 32 columns) for M >= 8, against 1.2 with tiles of 8 rows x 1 weight
// row (activations reloaded per FMA) and 1.25 with 4 x 2.
inline constexpr int kFloatTileRows = 3;

// The three kernels as tile families: the largest tile height, weight rows per block, and the
// kernel for one (TM, NR) shape at (weight row, activation row m0).
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

template <class D>
struct DecodedTiles {
  static constexpr int kMaxTm = 8;
  static constexpr int rows_for(int tm) { return detail::rows_for(tm); }
  template <int TM, int NR>
  static void tile(const MatmulArgs& a, int64_t row, int64_t m0) {
    tile_kernel<D, TM, NR>(a.w + row * static_cast<int64_t>(a.row_bytes), a.row_bytes, a.cols,
                           a.x + m0 * a.cols, a.cols, a.y + m0 * a.rows + row, a.rows);
  }
};

}  // namespace

void matmul_rows_avx2(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::F32: return run_tiles<FloatTiles<DecodeF32>>(a, row_begin, row_end);
    case TensorType::F16: return run_tiles<FloatTiles<DecodeF16>>(a, row_begin, row_end);
    case TensorType::BF16: return run_tiles<FloatTiles<DecodeBF16>>(a, row_begin, row_end);
    case TensorType::Q8_0: return run_tiles<IntTiles<CodesQ8_0>>(a, row_begin, row_end);
    case TensorType::Q4_0: return run_tiles<IntTiles<CodesQ4_0>>(a, row_begin, row_end);
    case TensorType::Q4_K: return run_tiles<DecodedTiles<DecodeQ4_K>>(a, row_begin, row_end);
    case TensorType::Q6_K: return run_tiles<DecodedTiles<DecodeQ6_K>>(a, row_begin, row_end);
    default: break;
  }
  AUGUR_CHECK(false, "matmul() admits only types with a decoder");
}

#undef AUGUR_ALWAYS_INLINE

#else  // not x86: isa.cpp never selects this path

void matmul_rows_avx2(const MatmulArgs&, int64_t, int64_t) {
  AUGUR_CHECK(false, "the AVX2 path exists only on x86");
}

#endif

}  // namespace augur::kernels::detail
