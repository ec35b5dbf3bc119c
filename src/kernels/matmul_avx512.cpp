// AVX-512 VNNI matmul path: Q8_0/Q4_0 weights times Q8_0 activations with `vpdpbusd` on 512-bit
// registers; F32/F16/BF16 run matmul_rows_float_avx512, the K-quants matmul_rows_kquant_avx512,
// Q5_0 matmul_rows_avx2.
//
// Q8_0/Q4_0 run the block-sum order (matmul_kernels.h, "Two orders"; docs/kernels.md, "The
// AVX-512 path"): 16 weight rows per tile, one per lane of a zmm, so that eight vpdpbusd per
// (block, activation row) give the 16 rows' exact block sums and one cvt, mul and fma per
// (block, activation row) accumulate them; bitwise matmul_rows_block_sums' results. Q8_0 weights
// packed at load (kernels/packed_weights.h) are read in that lane order; unpacked ones (Q4_0, and
// Q8_0 not packed for this path) are transposed block by block.
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

// Integer decoders of block s of two weight rows a and b as unsigned bytes (vpdpbusd multiplies
// unsigned by signed): row a's 32 in bytes 0..31, row b's in 32..63. Each is its code plus the
// type's unsigned_weight_bias, which the activations' bias corrections take off again.
struct UnsignedQ8_0 {
  static constexpr size_t kBlockBytes = sizeof(tensor::BlockQ8_0);
  static_assert(unsigned_weight_bias(TensorType::Q8_0) == 128);
  AUGUR_ALWAYS_INLINE static __m512i pair(const uint8_t* a, const uint8_t* b) {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2));
    const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(qa), qb, 1),
                            _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};

struct UnsignedQ4_0 {
  static constexpr size_t kBlockBytes = sizeof(tensor::BlockQ4_0);
  static_assert(unsigned_weight_bias(TensorType::Q4_0) == 8);  // the nibbles are the codes + 8
  // Low nibbles are elements 0..15, high nibbles 16..31.
  AUGUR_ALWAYS_INLINE static __m512i pair(const uint8_t* a, const uint8_t* b) {
    const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 2));
    const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    // 128-bit lanes [pa, pa, pb, pb]; the odd lanes take the high nibbles.
    const __m512i spread =
        _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3),
                                 _mm512_castsi256_si512(_mm256_set_m128i(pb, pa)));
    const __m512i shifted = _mm512_srlv_epi64(spread, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
    return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
  }
};

// Weight rows per tile: one per lane of a zmm of int32 block sums.
constexpr int kTileRows = 16;
// Activation rows per tile: 16 float accumulators, 8 weight registers and a few temporaries fill
// the 32 zmm registers, and every verify of up to 16 rows streams the weights once.
constexpr int kMaxTm = 16;

// acc + u * (the four signed bytes at p, in every lane), with the broadcast folded into vpdpbusd's
// memory operand (GCC 12 emits a separate vpbroadcastd for the intrinsic).
AUGUR_ALWAYS_INLINE __m512i dpbusd_broadcast(__m512i acc, __m512i u, const int8_t* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0"
      : "+v"(acc)
      : "v"(u), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
}

// 16 weight rows' codes of one block, z[p] = [row p | row p + 8] (8 dwords each), turned into
// w[j] = dword j (codes 4j..4j+3) of every row: three levels of unpacks and 128-bit shuffles.
// Lane i of every w[j] holds row kLaneRow[i] = {0-3, 8-11, 4-7, 12-15}[i].
AUGUR_ALWAYS_INLINE void transpose_rows(const __m512i (&z)[8], __m512i (&w)[8]) {
  __m512i a[8], b[8];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    a[2 * q] = _mm512_unpacklo_epi32(z[2 * q], z[2 * q + 1]);
    a[2 * q + 1] = _mm512_unpackhi_epi32(z[2 * q], z[2 * q + 1]);
  }
  // Per 128-bit lane, b[4g + k] holds dword k (lanes 0 and 2) or k + 4 (lanes 1 and 3) of rows
  // 4g..4g+3 (lanes 0 and 1) or 4g+8..4g+11 (lanes 2 and 3).
#pragma GCC unroll 2
  for (int g = 0; g < 2; ++g) {
    b[4 * g] = _mm512_unpacklo_epi64(a[4 * g], a[4 * g + 2]);
    b[4 * g + 1] = _mm512_unpackhi_epi64(a[4 * g], a[4 * g + 2]);
    b[4 * g + 2] = _mm512_unpacklo_epi64(a[4 * g + 1], a[4 * g + 3]);
    b[4 * g + 3] = _mm512_unpackhi_epi64(a[4 * g + 1], a[4 * g + 3]);
  }
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    w[k] = _mm512_shuffle_i32x4(b[k], b[4 + k], 0x88);
    w[k + 4] = _mm512_shuffle_i32x4(b[k], b[4 + k], 0xDD);
  }
}

// acc[m] = fma(float(isum), dw * dx, acc[m]) for block s and activation rows m0 .. m0 + TM - 1,
// where w holds the block's codes + bias of 16 weight rows, one per lane (dword j in w[j]), and
// isum = bias correction + sum((codes + bias) * x) is the exact block sum: the correction,
// -bias * sum(x), is made with the blocked activations, so a block sum starts from a broadcast
// load instead of a multiply and a move from a general register per row. (Interleaving the
// vpdpbusd chains of several activation rows by hand gained nothing: the compiler reorders them.)
template <int TM>
AUGUR_ALWAYS_INLINE void accumulate_block(const MatmulArgs& a, const __m512i (&w)[8], __m512 dw,
                                          int64_t s, int64_t m0, __m512 (&acc)[TM]) {
  const int64_t at = blocked_index(a.M, a.cols / 32, m0, s);
  const int8_t* xq = a.xq_blocked + 32 * at;
  const float* xd = a.xd_blocked + at;
  const int32_t* bias = a.xbias_blocked + at;
#pragma GCC unroll 16
  for (int m = 0; m < TM; ++m) {
    __m512i isum = _mm512_set1_epi32(bias[m]);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) isum = dpbusd_broadcast(isum, w[j], xq + 32 * m + 4 * j);
    const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(xd[m]));
    acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), d, acc[m]);
  }
}

// y[m * rows + row + r] = dot(weight row row + r, activation row m0 + m) for r < nr <= 16,
// m < TM, in the block-sum order: per block, the weight rows' codes are transposed once into eight
// registers with one row per lane, and every activation row adds its eight code dwords to them
// with vpdpbusd (broadcast from memory): one zmm holds the 16 rows' exact block sums
// isum = sum((codes + bias) * x) - bias * sum(x). Then acc = fma(float(isum), dw * dx, acc) per
// block, a zmm over weight rows: matmul_rows_block_sums' float chain for every (row, activation
// row), whatever TM, nr or the thread split.
template <class C, int TM>
void block_sum_tile(const MatmulArgs& a, int64_t row, int nr, int64_t m0) {
  const int64_t blocks = a.cols / 32;
  const uint8_t* w0 = a.w + row * static_cast<int64_t>(a.row_bytes);
  // Rows past nr repeat the last row (never read past the range) and are dropped at the end.
  const uint8_t* rows[kTileRows];
  for (int r = 0; r < kTileRows; ++r) rows[r] = w0 + (r < nr ? r : nr - 1) * a.row_bytes;
  const __m512i lane_row = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  const __m512i scale_at = _mm512_mullo_epi32(_mm512_min_epi32(lane_row, _mm512_set1_epi32(nr - 1)),
                                              _mm512_set1_epi32(static_cast<int>(a.row_bytes)));
  __m512 acc[TM];
#pragma GCC unroll 16
  for (int m = 0; m < TM; ++m) acc[m] = _mm512_setzero_ps();
  for (int64_t s = 0; s < blocks; ++s) {
    const size_t at = C::kBlockBytes * s;
    if (s % 2 == 0) {
      for (int r = 0; r < nr; ++r) prefetch_ahead(rows[r] + at);
    }
    __m512i z[8], w[8];
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) z[p] = C::pair(rows[p] + at, rows[p + 8] + at);
    transpose_rows(z, w);
    // The rows' fp16 scales (with the two bytes after them, unused), widened to floats.
    const __m512 dw =
        _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(scale_at, w0 + at, 1)));
    accumulate_block<TM>(a, w, dw, s, m0, acc);
  }
  // Lanes back to row order (swap the middle two 128-bit lanes).
  const __mmask16 live = static_cast<__mmask16>((1u << nr) - 1);
#pragma GCC unroll 16
  for (int m = 0; m < TM; ++m) {
    _mm512_mask_storeu_ps(a.y + (m0 + m) * a.rows + row, live,
                          _mm512_shuffle_f32x4(acc[m], acc[m], 0xD8));
  }
}

// f.template operator()<TM>() with TM = tm, for 1 <= tm <= kMaxTm: each tile height runs a kernel
// compiled for it.
template <int TM = kMaxTm, class F>
void with_tile_height(int tm, F&& f) {
  if constexpr (TM > 1) {
    if (tm < TM) return with_tile_height<TM - 1>(tm, f);
  }
  f.template operator()<TM>();
}

template <class C>
void run_block_sums(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  AUGUR_CHECK(a.xbias_blocked != nullptr,
              "the avx512 integer kernels need the activation block sums");
  for_each_tile(
      a, row_begin, row_end, kMaxTm, [](int) { return kTileRows; },
      [&a](int tm, int64_t row, int nr, int64_t m0) {
        with_tile_height(tm, [&]<int TM>() { block_sum_tile<C, TM>(a, row, nr, m0); });
      });
}

// How far ahead of the kernel the packed stream is prefetched, from five activation rows on:
// without it the stream fell to half of DRAM speed once the rows made each block's work longer;
// 2 KB ahead got most of it back, 8 KB all of it (a 570 MB matrix, 2 threads: M = 16 in 1.25x the
// time of M = 1). Into L2, not L1: there the L1 prefetches' misses held up the block loop (AMD
// EPYC Zen 4, 2 threads, zoo-wide's 56 layer matrices: M = 8 in 15.0-15.6 ms against 17.1-17.9).
// Below five rows the kernel keeps up with the stream and the hardware prefetcher does better
// alone (paired runs, no prefetch against 8 KB into L1: M = 1 in 0.90-0.96x the time, M = 2-4 in
// 0.94-0.98x; zoo-wide T_V(1) 8.3-8.6 ms against 9.4-9.5). At five rows it depends on the
// machine's mood (0.97x when DRAM gave 35 GB/s, 1.14x when it gave 60), from six on it is worse
// (M = 6 1.04x, M = 8 1.2x).
constexpr int kPackedAhead = 8192;
template <int TM>
constexpr bool kPrefetchPacked = TM >= 5;

// Readers of kernels/packed_weights.h's layouts: w[j] = codes 4j..4j+3 + bias of the group's
// 16 rows of one block.
struct PackedQ8_0 {
  static constexpr int kCodeBytes = 512;
  AUGUR_ALWAYS_INLINE static void load(const uint8_t* c, __m512i (&w)[8]) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) w[j] = _mm512_load_si512(c + 64 * j);
  }
};

struct PackedQ4_0 {
  static constexpr int kCodeBytes = 256;
  // Register k holds elements 4k..4k+3 in its low nibbles and 4k+16..4k+19 in its high ones.
  AUGUR_ALWAYS_INLINE static void load(const uint8_t* c, __m512i (&w)[8]) {
    const __m512i low = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i bytes = _mm512_load_si512(c + 64 * k);
      w[k] = _mm512_and_si512(bytes, low);
      w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
    }
  }
};

// block_sum_tile over kernels/packed_weights.h's layout: rows row .. row + nr - 1 of a packed
// group (row a multiple of 16), the codes and scales read in order from one stream each.
template <class P, int TM>
void packed_tile(const MatmulArgs& a, int64_t row, int nr, int64_t m0) {
  const int64_t blocks = a.cols / 32, groups = (a.rows + kTileRows - 1) / kTileRows;
  const uint8_t* codes = a.packed + (row / kTileRows) * blocks * P::kCodeBytes;
  const uint8_t* scales =
      a.packed + groups * blocks * P::kCodeBytes + (row / kTileRows) * blocks * 2 * kTileRows;
  __m512 acc[TM];
#pragma GCC unroll 16
  for (int m = 0; m < TM; ++m) acc[m] = _mm512_setzero_ps();
  for (int64_t s = 0; s < blocks; ++s) {
    const uint8_t* c = codes + s * P::kCodeBytes;
    if constexpr (kPrefetchPacked<TM>) {
#pragma GCC unroll 8
      for (int j = 0; j < P::kCodeBytes / 64; ++j) {
        _mm_prefetch(reinterpret_cast<const char*>(c) + kPackedAhead + 64 * j, _MM_HINT_T1);
      }
      // The scales advance 32 bytes per block, at 32 / kCodeBytes of the codes' pace.
      if (s % 2 == 0) {
        _mm_prefetch(reinterpret_cast<const char*>(scales + s * 2 * kTileRows) +
                         kPackedAhead * 32 / P::kCodeBytes,
                     _MM_HINT_T1);
      }
    }
    __m512i w[8];
    P::load(c, w);
    const __m512 dw = _mm512_cvtph_ps(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(scales + s * 2 * kTileRows)));
    accumulate_block<TM>(a, w, dw, s, m0, acc);
  }
  const __mmask16 live = static_cast<__mmask16>((1u << nr) - 1);
#pragma GCC unroll 16
  for (int m = 0; m < TM; ++m) _mm512_mask_storeu_ps(a.y + (m0 + m) * a.rows + row, live, acc[m]);
}

template <class P>
void run_packed(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  AUGUR_CHECK(a.xbias_blocked != nullptr && row_begin % kTileRows == 0,
              "packed rows need the activation block sums and whole groups");
  for_each_tile(
      a, row_begin, row_end, kMaxTm, [](int) { return kTileRows; },
      [&a](int tm, int64_t row, int nr, int64_t m0) {
        with_tile_height(tm, [&]<int TM>() { packed_tile<P, TM>(a, row, nr, m0); });
      });
}

}  // namespace

void matmul_rows_avx512(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::Q8_0:
      return a.packed != nullptr ? run_packed<PackedQ8_0>(a, row_begin, row_end)
                                 : run_block_sums<UnsignedQ8_0>(a, row_begin, row_end);
    case TensorType::Q4_0:
      return a.packed != nullptr ? run_packed<PackedQ4_0>(a, row_begin, row_end)
                                 : run_block_sums<UnsignedQ4_0>(a, row_begin, row_end);
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
