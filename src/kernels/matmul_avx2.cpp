// AVX2 + FMA + F16C matmul path, three kernels:
// - F32/F16/BF16 (float_tile_kernel): 8 columns of up to 3 activation rows meet up to 4 weight
//   rows decoded 8 at a time (F16 via vcvtph2ps), one FMA chain per (weight row, activation row);
// - Q8_0/Q4_0/Q5_0 (int_tile_kernel): llama.cpp's integer dot products on Q8_0 activations;
// - Q4_K/Q5_K/Q6_K (kquant_tile_kernel): llama.cpp's integer dot products on Q8_K activations,
//   one weight row against up to 8 activation rows.
// Compiled with -mavx2 -mfma -mf16c -mbmi2 and only called when the CPU has them, so this file
// uses no inline function or template shared with other files (those could be kept by the linker
// for everyone): helpers are file-local and std:: headers are avoided.
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

// Decoders must melt into the tile loop so their four results stay in registers.
#define AUGUR_ALWAYS_INLINE inline __attribute__((always_inline))

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

// Weight rows per block for a tile of `tm` activation rows: enough independent FMA chains
// (latency 4, two ports: about 8 in flight) within the 16 ymm registers.
constexpr int rows_for(int tm) {
  return tm <= 2 ? 4 : tm <= 4 ? 2 : 1;
}

// Integer decoders of Q8_0/Q4_0/Q5_0 blocks: the 32 codes of a block as signed bytes, from its
// payload (the bytes after the fp16 scale).
struct CodesQ8_0 {
  static constexpr int64_t kBlockBytes = sizeof(tensor::BlockQ8_0);
  AUGUR_ALWAYS_INLINE static __m256i codes(const uint8_t* payload) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(payload));
  }
};

struct CodesQ4_0 {
  static constexpr int64_t kBlockBytes = sizeof(tensor::BlockQ4_0);
  // Low nibbles are elements 0..15, high nibbles 16..31; minus 8.
  AUGUR_ALWAYS_INLINE static __m256i codes(const uint8_t* payload) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(payload));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    return _mm256_sub_epi8(_mm256_and_si256(both, _mm256_set1_epi8(0x0F)), _mm256_set1_epi8(8));
  }
};

// 32 codes of a Q5_0 block: the nibbles with the fifth bit from qh (bit e for element e), minus 16.
struct CodesQ5_0 {
  static constexpr int64_t kBlockBytes = sizeof(tensor::BlockQ5_0);
  AUGUR_ALWAYS_INLINE static __m256i codes(const uint8_t* payload) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(payload + 4));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    const __m256i nibbles = _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
    uint32_t qh;
    __builtin_memcpy(&qh, payload, 4);
    // Byte e gets byte e / 8 of qh, then keeps bit e % 8: 0x10 where the fifth bit is set.
    const __m256i spread =
        _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                            _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                               0x0202020202020202, 0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    const __m256i fifth = _mm256_and_si256(set, _mm256_set1_epi8(0x10));
    return _mm256_sub_epi8(_mm256_or_si256(nibbles, fifth), _mm256_set1_epi8(16));
  }
};

// Where block k of the group of eight blocks from s0 (s0 % 8 == 0, all eight in the row) keeps its
// scale and payload, from the group's start `base` = row + kBlockBytes * s0 (the same in both
// layouts): in the GGUF layout each block is scale then payload; in the scale-group layout
// (kernels/packed_weights.h) the group's eight scales come first, then its eight payloads. Blocks
// after the last whole group are in the GGUF layout in both.
template <class C, bool kGrouped>
struct Group {
  static constexpr int64_t kPayloadBytes = C::kBlockBytes - 2;
  AUGUR_ALWAYS_INLINE static const uint8_t* scale(const uint8_t* base, int k) {
    return kGrouped ? base + 2 * k : base + C::kBlockBytes * k;
  }
  AUGUR_ALWAYS_INLINE static const uint8_t* payload(const uint8_t* base, int k) {
    return kGrouped ? base + 16 + kPayloadBytes * k : base + C::kBlockBytes * k + 2;
  }
  // The eight fp16 scales as int16 lanes: one load in the scale-group layout, eight in GGUF's.
  AUGUR_ALWAYS_INLINE static __m128i scales(const uint8_t* base) {
    if constexpr (kGrouped) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(base));
    } else {
      return _mm_setr_epi16(static_cast<short>(load_u16(scale(base, 0))),
                            static_cast<short>(load_u16(scale(base, 1))),
                            static_cast<short>(load_u16(scale(base, 2))),
                            static_cast<short>(load_u16(scale(base, 3))),
                            static_cast<short>(load_u16(scale(base, 4))),
                            static_cast<short>(load_u16(scale(base, 5))),
                            static_cast<short>(load_u16(scale(base, 6))),
                            static_cast<short>(load_u16(scale(base, 7))));
    }
  }
};

// y[m * ldy + r] = dot(weight row r, Q8_0 activation row m) for r < NR, m < TM, as llama.cpp's
// AVX2 vec_dot_q8_0_q8_0 / vec_dot_q4_0_q8_0 compute it: per block, eight exact int32 lane sums
// (lane j = elements 4j..4j+3) become floats and are accumulated as acc = fma(dw * dx, sums, acc);
// the eight lanes are summed once at the end. One chain per (r, m) pair in block order, whatever
// TM and NR are, so the result is batch-invariant like the float kernel's. With two or more
// activation rows the scale products dw * dx come eight blocks at a time, one vcvtph2ps and one
// multiply per eight blocks instead of a conversion and a multiply per block (the kernel then
// broadcasts each from memory, which costs no ALU slot): on zoo-wide Q8_0, AMD EPYC Zen 3, 2
// threads, best of 15, T_V(4) 27.6-28.3 ms against 29.5-36.1 and T_V(8) 49-52 against 54-71
// (docs/kernels.md). The products are the same floats either way, so rows stay bitwise equal to
// the per-block form a single row keeps (it is bound by memory). kGrouped reads the weights in the
// scale-group layout, where the eight scales are one load instead of eight (docs/kernels.md).
template <class C, bool kGrouped, int TM, int NR>
void int_tile_kernel(const uint8_t* w0, size_t row_bytes, int64_t cols, const int8_t* xq,
                     const float* xd, int64_t ldx, float* y, int64_t ldy) {
  using G = Group<C, kGrouped>;
  __m256 acc[NR][TM];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t blocks = cols / 32, ldd = ldx / 32;
  // Block s's products for every (r, m) pair, given its payload in row r and scale product d(r, m).
  const auto block = [&](int64_t s, auto&& payload, auto&& d) __attribute__((always_inline)) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const uint8_t* p = payload(r);
      prefetch_ahead(p);
      const __m256i q = C::codes(p);
      const __m256i magnitude = _mm256_sign_epi8(q, q);  // |q| as unsigned bytes
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) {
        const __m256i x =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + m * ldx + 32 * s));
        // |q| * (x with q's sign) = q * x; pairs of products fit int16 (|q|, |x| <= 128, 127).
        const __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(x, q));
        const __m256 sums = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        acc[r][m] = _mm256_fmadd_ps(d(r, m), sums, acc[r][m]);
      }
    }
  };
  // dw * dx for one block, from its scale bytes.
  const auto product = [&](const uint8_t* scale, int m, int64_t s) __attribute__((always_inline)) {
    return _mm256_mul_ps(_mm256_set1_ps(half_to_float(scale)),
                         _mm256_broadcast_ss(xd + m * ldd + s));
  };
  int64_t s = 0;
  for (; s + 8 <= blocks; s += 8) {
    const uint8_t* base = w0 + C::kBlockBytes * s;
    alignas(32) float products[NR][TM][8];
    if constexpr (TM >= 2) {
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        const __m256 dw = _mm256_cvtph_ps(G::scales(base + r * row_bytes));
#pragma GCC unroll 8
        for (int m = 0; m < TM; ++m) {
          _mm256_store_ps(products[r][m], _mm256_mul_ps(dw, _mm256_loadu_ps(xd + m * ldd + s)));
        }
      }
    }
#pragma GCC unroll 2
    for (int k = 0; k < 8; ++k) {
      block(
          s + k,
          [&](int r) __attribute__((always_inline)) { return G::payload(base + r * row_bytes, k); },
          [&](int r, int m) __attribute__((always_inline)) {
            if constexpr (TM >= 2) {
              return _mm256_broadcast_ss(&products[r][m][k]);
            } else {
              return product(G::scale(base + r * row_bytes, k), m, s + k);
            }
          });
    }
  }
  for (; s < blocks; ++s) {
    const uint8_t* b = w0 + C::kBlockBytes * s;
    block(
        s, [&](int r) __attribute__((always_inline)) { return b + r * row_bytes + 2; },
        [&](int r, int m)
            __attribute__((always_inline)) { return product(b + r * row_bytes, m, s); });
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int m = 0; m < TM; ++m) y[m * ldy + r] = hsum(acc[r][m]);
  }
}

// ---- K-quants on Q8_K activations ----
// Each K::lanes<TM> adds, for one weight super-block and TM activation rows, the exact int32 lane
// sums of llama.cpp's AVX2 vec_dot_q{4,5,6}_K_q8_K to sumi[m]: lane u = sum over the super-block
// of sub-block scale x weight code x activation code for elements 4u..4u+3 of every 32 (maddubs
// pairs, madd with the scale). Integer sums are exact, so only the float steps after them (in
// kquant_tile_kernel) fix the result; they are the scalar path's, in the same order.

// int16 element j of `scales` (both 128-bit halves hold the 8 scales) in all 16 positions.
AUGUR_ALWAYS_INLINE __m256i scale_of(__m256i scales, int j) {
  return _mm256_shuffle_epi8(scales,
                             _mm256_set1_epi16(static_cast<short>(((2 * j + 1) << 8) | (2 * j))));
}

// Q4_K: sub-block 2p is the low nibbles of qs[32p..32p+31], sub-block 2p+1 the high ones.
struct KQ4_K {
  static constexpr int kBytes = sizeof(tensor::BlockQ4_K);
  static constexpr bool kLaneMins = true, kScalarMins = false;
  template <int TM>
  AUGUR_ALWAYS_INLINE static void lanes(const uint8_t* b, const int8_t* x, int64_t ldx,
                                        __m128i scales, __m256i* sumi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), mins_scales = _mm256_set_m128i(scales, scales);
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * p));
      const __m256i lo = _mm256_and_si256(bits, m4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
      const __m256i s_lo = scale_of(mins_scales, 2 * p), s_hi = scale_of(mins_scales, 2 * p + 1);
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) {
        const int8_t* xm = x + m * ldx + 64 * p;
        const __m256i y_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xm));
        const __m256i y_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xm + 32));
        const __m256i p_lo = _mm256_madd_epi16(s_lo, _mm256_maddubs_epi16(lo, y_lo));
        const __m256i p_hi = _mm256_madd_epi16(s_hi, _mm256_maddubs_epi16(hi, y_hi));
        sumi[m] = _mm256_add_epi32(sumi[m], _mm256_add_epi32(p_lo, p_hi));
      }
    }
  }
};

// Q5_K: Q4_K's nibbles plus a fifth bit, bit j of qh[l] for element l of sub-block j (l < 32).
struct KQ5_K {
  static constexpr int kBytes = sizeof(tensor::BlockQ5_K);
  static constexpr bool kLaneMins = false, kScalarMins = true;
  template <int TM>
  AUGUR_ALWAYS_INLINE static void lanes(const uint8_t* b, const int8_t* x, int64_t ldx,
                                        __m128i scales, __m256i* sumi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i mins_scales = _mm256_set_m128i(scales, scales);
    const __m256i hbits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 48 + 32 * p));
      const __m256i h_lo =
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p), one), 4);
      const __m256i h_hi =
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p + 1), one), 4);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(bits, m4), h_lo);
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), h_hi);
      const __m256i s_lo = scale_of(mins_scales, 2 * p), s_hi = scale_of(mins_scales, 2 * p + 1);
#pragma GCC unroll 8
      for (int m = 0; m < TM; ++m) {
        const int8_t* xm = x + m * ldx + 64 * p;
        const __m256i y_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xm));
        const __m256i y_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xm + 32));
        const __m256i p_lo = _mm256_madd_epi16(s_lo, _mm256_maddubs_epi16(lo, y_lo));
        const __m256i p_hi = _mm256_madd_epi16(s_hi, _mm256_maddubs_epi16(hi, y_hi));
        sumi[m] = _mm256_add_epi32(sumi[m], _mm256_add_epi32(p_lo, p_hi));
      }
    }
  }
};

// Q6_K: per half h and quarter k (tensor/blocks.h), 32 unsigned 6-bit codes; (q - 32) * y is
// maddubs(q, y) - maddubs(32, y), exact in int16 (|.| <= 8128 per pair), as ggml does it.
struct KQ6_K {
  static constexpr int kBytes = sizeof(tensor::BlockQ6_K);
  static constexpr bool kLaneMins = false, kScalarMins = false;
  template <int TM>
  AUGUR_ALWAYS_INLINE static void lanes(const uint8_t* b, const int8_t* x, int64_t ldx, __m128i,
                                        __m256i* sumi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    const __m256i m32 = _mm256_set1_epi8(32);
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192));
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h));
      const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i low_src = (k & 1) ? ql1 : ql0;
        const __m256i low = _mm256_and_si256(k >> 1 ? _mm256_srli_epi16(low_src, 4) : low_src, m4);
        const __m256i high =
            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m3), 4);
        const __m256i q = _mm256_or_si256(low, high);
        // int16 positions 0..7 (elements 0..15) take scale 8h + 2k, 8..15 take 8h + 2k + 1.
        const int i = 8 * h + 2 * k;
        const __m128i pick =
            _mm_set_epi64x(0x0101010101010101LL * (i + 1), 0x0101010101010101LL * i);
        const __m256i scale = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
#pragma GCC unroll 8
        for (int m = 0; m < TM; ++m) {
          const __m256i y =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + m * ldx + 128 * h + 32 * k));
          const __m256i prod =
              _mm256_sub_epi16(_mm256_maddubs_epi16(q, y), _mm256_maddubs_epi16(m32, y));
          sumi[m] = _mm256_add_epi32(sumi[m], _mm256_madd_epi16(scale, prod));
        }
      }
    }
  }
};

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

// kGrouped: the weights are a.packed in the scale-group layout, else a.w.
template <class C, bool kGrouped>
struct IntTiles {
  static constexpr int kMaxTm = 8;
  static constexpr int rows_for(int tm) { return detail::rows_for(tm); }
  template <int TM, int NR>
  static void tile(const MatmulArgs& a, int64_t row, int64_t m0) {
    const uint8_t* w = kGrouped ? a.packed : a.w;
    int_tile_kernel<C, kGrouped, TM, NR>(w + row * static_cast<int64_t>(a.row_bytes), a.row_bytes,
                                         a.cols, a.xq + m0 * a.cols, a.xd + m0 * (a.cols / 32),
                                         a.cols, a.y + m0 * a.rows + row, a.rows);
  }
};

template <class C>
void run_int_tiles(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  if (a.packed != nullptr) return run_tiles<IntTiles<C, true>>(a, row_begin, row_end);
  run_tiles<IntTiles<C, false>>(a, row_begin, row_end);
}

}  // namespace

void matmul_rows_avx2(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::F32: return run_tiles<FloatTiles<DecodeF32>>(a, row_begin, row_end);
    case TensorType::F16: return run_tiles<FloatTiles<DecodeF16>>(a, row_begin, row_end);
    case TensorType::BF16: return run_tiles<FloatTiles<DecodeBF16>>(a, row_begin, row_end);
    case TensorType::Q8_0: return run_int_tiles<CodesQ8_0>(a, row_begin, row_end);
    case TensorType::Q4_0: return run_int_tiles<CodesQ4_0>(a, row_begin, row_end);
    case TensorType::Q5_0: return run_int_tiles<CodesQ5_0>(a, row_begin, row_end);
    case TensorType::Q4_K: return run_tiles<KQuantTiles<KQ4_K>>(a, row_begin, row_end);
    case TensorType::Q5_K: return run_tiles<KQuantTiles<KQ5_K>>(a, row_begin, row_end);
    case TensorType::Q6_K: return run_tiles<KQuantTiles<KQ6_K>>(a, row_begin, row_end);
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
