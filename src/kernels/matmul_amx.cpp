// AMX-INT8 matmul path: Q8_0/Q4_0 weights times Q8_0 activations with `tdpbssd` tiles, in the
// block-sum arithmetic (matmul_kernels.h, "Two orders"); every other weight type runs
// matmul_rows_avx512.
//
// For each (weight row r, activation row m) the result is one float chain in block order,
//   acc = fma(float(isum[r, m, s]), dw[r, s] * dx[m, s], acc),
// where isum is block s's exact int32 dot product of 32 codes: ggml's reference
// vec_dot_q8_0_q8_0 / vec_dot_q4_0_q8_0 and its AMX kernels. One tdpbssd per block gives isum for
// 16 weight rows x 16 activation rows at once:
//   A (weights):     nr <= 16 rows of the block's 32 codes, read in place from the Q8_0 rows with
//                    the row pitch as tile stride (Q4_0: unpacked to signed bytes first);
//   B (activations): 8 rows of 16 dwords, row j holding codes 4j..4j+3 of activation rows m0..m0+15
//                    (packed once per call by pack_activations);
//   C = A B:         16 x 16 int32 block sums, stored to a small buffer.
// A float pass then takes, per weight row, a zmm over the 16 activation rows: d = dw[r] * dx[m]
// (one rounding), acc[r] = fma(float(C[r]), d, acc[r]), with all 16 accumulators in registers for
// the whole row. The tile products of the next group of blocks are issued before the float pass
// over the current group, into the other half of a double buffer, so the two overlap.
// Every (r, m) pair runs the same operations in the same order whatever M, nr or the thread split
// (batch invariance), and equals matmul_rows_block_sums, the portable form of this arithmetic.
// Compiled with AMX and AVX-512 flags and only called when cpu_supports(Isa::kAmx) (which also
// obtained Linux's permission for the tile data), so it uses file-local helpers only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <memory>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "tensor/blocks.h"

namespace augur::kernels::detail {

#if defined(__x86_64__)
namespace {

using gguf::TensorType;

#define AUGUR_ALWAYS_INLINE inline __attribute__((always_inline))

// Up to this many activation rows run vnni_tile instead of the tiles.
constexpr int kVnniMaxTm = 2;
// Up to this many activation rows, 32 weight rows share each tile of activations (pair_tile), so
// that the float pass uses all 16 lanes of its registers.
constexpr int kPairTm = 8;
// Activation rows per tile (the 16 dword columns of C) and weight rows per tile (C's 16 rows).
constexpr int kTileM = 16;
constexpr int kTileRows = 16;
// Blocks per group: their C tiles are stored before the float pass over them (4 was 10 % slower
// from DRAM).
constexpr int kGroup = 2;
// How far ahead of the tiles the weight rows are prefetched.
constexpr int kPrefetchBytes = 272;

// Palette 1 tile configuration (the layout ldtilecfg reads).
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Tiles 0-3 hold C (two per half of the double buffer), 4-5 A and 6-7 B (alternating blocks).
// `loaded` caches the row count this thread's tiles are configured for (-1 after _tile_release).
void configure_tiles(int nr, int& loaded) {
  if (nr == loaded) return;
  TileConfig config{};
  config.palette_id = 1;
  for (int t = 0; t < 4; ++t) {
    config.rows[t] = static_cast<uint8_t>(nr);
    config.colsb[t] = 4 * kTileM;
  }
  for (int t = 4; t < 6; ++t) {
    config.rows[t] = static_cast<uint8_t>(nr);
    config.colsb[t] = 32;
  }
  for (int t = 6; t < 8; ++t) {
    config.rows[t] = 8;
    config.colsb[t] = 4 * kTileM;
  }
  // Not _tile_loadconfig: GCC 12's version tells the compiler it reads only the first 8 bytes, so
  // the stores of rows and colsb are dropped as dead.
  asm volatile("ldtilecfg %0" : : "m"(config) : "memory");
  loaded = nr;
}

// For pair_tile: C tiles 0 and 2 take weight rows 0-15 (nr0 of them), 1 and 3 rows 16-31 (nr1),
// each 8 activation rows wide; A tile 4 rows 0-15, 5 rows 16-31; B tiles 6-7 hold 8 activation
// rows. Cached in `loaded` under a key no 16-row configuration uses.
void configure_pair_tiles(int nr0, int nr1, int& loaded) {
  const int key = 1000 + 32 * nr0 + nr1;
  if (key == loaded) return;
  TileConfig config{};
  config.palette_id = 1;
  for (int t = 0; t < 4; ++t) {
    config.rows[t] = static_cast<uint8_t>(t % 2 == 0 ? nr0 : nr1);
    config.colsb[t] = 4 * kPairTm;
  }
  config.rows[4] = static_cast<uint8_t>(nr0);
  config.rows[5] = static_cast<uint8_t>(nr1);
  config.colsb[4] = config.colsb[5] = 32;
  for (int t = 6; t < 8; ++t) {
    config.rows[t] = 8;
    config.colsb[t] = 4 * kPairTm;
  }
  asm volatile("ldtilecfg %0" : : "m"(config) : "memory");
  loaded = key;
}

// Per worker thread, grown to the largest call seen: the kernels allocate nothing once warm.
struct Scratch {
  // Not std::vector: its members are inline templates shared with other files, which the linker
  // could take from this AMX-flagged object for everyone (docs/kernels.md, "ODR hazard").
  int32_t* xp = nullptr;    // activation codes, [m-tile][block][8][kTileM] dwords
  float* dxp = nullptr;     // activation scales, [m-tile][block][kTileM]
  int32_t* xsum = nullptr;  // sums of each activation block's codes, [m][block] (m < M)
  size_t capacity = 0;      // m-tiles x blocks that xp, dxp and xsum hold
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    delete[] xp;
    delete[] dxp;
    delete[] xsum;
  }
  alignas(64) int32_t c[2][kGroup][kTileRows][kTileM];     // double-buffered block sums
  alignas(64) float dw[2][kGroup][2 * kTileRows];          // the weight rows' block scales
  alignas(64) int8_t codes[2][kGroup][2 * kTileRows][32];  // unpacked Q4_0 codes
  int loaded = -1;                                         // configure_tiles' cache
};

// On the heap, made on a thread's first AMX call: a thread_local Scratch would add its 20 KB to the
// static TLS of every thread of the process.
Scratch& scratch() {
  thread_local std::unique_ptr<Scratch> s;
  if (!s) s = std::make_unique<Scratch>();
  return *s;
}

// xsum for every activation row; xp / dxp for the tiles of more than kVnniMaxTm rows.
void pack_activations(const MatmulArgs& a, Scratch& sc) {
  const int64_t blocks = a.cols / 32, tiles = (a.M + kTileM - 1) / kTileM;
  const auto need = static_cast<size_t>(tiles * blocks);
  if (need > sc.capacity) {
    delete[] sc.xp;
    delete[] sc.dxp;
    delete[] sc.xsum;
    sc.xp = nullptr;
    sc.dxp = nullptr;
    sc.xsum = nullptr;
    sc.capacity = 0;
    sc.xp = new int32_t[need * 8 * kTileM];
    sc.dxp = new float[need * kTileM];
    sc.xsum = new int32_t[need * kTileM];
    sc.capacity = need;
  }
  for (int64_t i = 0; i < a.M * blocks; ++i) {
    // Sum of 32 codes: vpdpbusd of ones (unsigned) with the codes (signed), then the lanes.
    const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xq + 32 * i));
    const __m256i lanes = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), codes);
    __m128i half = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
    half = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0x4E));
    half = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0xB1));
    sc.xsum[i] = _mm_cvtsi128_si32(half);
  }
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t m0 = t * kTileM;
    const int tm = static_cast<int>(a.M - m0 < kTileM ? a.M - m0 : kTileM);
    if (tm <= kVnniMaxTm) continue;  // vnni_tile reads the codes in place
    int32_t* xp = sc.xp + t * blocks * 8 * kTileM;
    float* dxp = sc.dxp + t * blocks * kTileM;
    // Scales of absent rows are zero, so their columns of C (whatever B held there) add nothing.
    for (int64_t s = 0; s < blocks; ++s) _mm512_storeu_ps(dxp + s * kTileM, _mm512_setzero_ps());
    for (int m = 0; m < tm; ++m) {
      const int8_t* xq = a.xq + (m0 + m) * a.cols;
      const float* xd = a.xd + (m0 + m) * blocks;
      for (int64_t s = 0; s < blocks; ++s) {
        for (int j = 0; j < 8; ++j) {
          int32_t word;
          __builtin_memcpy(&word, xq + 32 * s + 4 * j, 4);
          xp[(s * 8 + j) * kTileM + m] = word;
        }
        dxp[s * kTileM + m] = xd[s];
      }
    }
  }
}

// Where tdpbssd finds the 32 codes of block s of a tile's weight rows.
struct CodesQ8_0 {
  static constexpr size_t kBlockBytes = sizeof(tensor::BlockQ8_0);
  // For vpdpbusd (unsigned x signed): codes + 128 as unsigned bytes, so the block sum comes out
  // too large by 128 times the activation codes' sum.
  static constexpr int kBias = 128;
  // Block s of rows a and b as unsigned bytes, a's 32 in bytes 0..31, b's in 32..63.
  AUGUR_ALWAYS_INLINE static __m512i unsigned_pair(const uint8_t* a, const uint8_t* b) {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2));
    const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(qa), qb, 1),
                            _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  // Q8_0 codes are read in place: base of row 0's codes, rows a pitch apart.
  AUGUR_ALWAYS_INLINE static const int8_t* codes(const uint8_t* w0, size_t row_bytes, int64_t s,
                                                 int, int8_t (*)[32], size_t* stride) {
    *stride = row_bytes;
    return reinterpret_cast<const int8_t*>(w0 + kBlockBytes * s + 2);
  }
};

struct CodesQ4_0 {
  static constexpr size_t kBlockBytes = sizeof(tensor::BlockQ4_0);
  // The nibbles are the codes + 8.
  static constexpr int kBias = 8;
  // Low nibbles are elements 0..15, high nibbles 16..31.
  AUGUR_ALWAYS_INLINE static __m512i unsigned_pair(const uint8_t* a, const uint8_t* b) {
    const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 2));
    const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    // 128-bit lanes [pa, pa, pb, pb]; the odd lanes take the high nibbles.
    const __m512i spread =
        _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3),
                                 _mm512_castsi256_si512(_mm256_set_m128i(pb, pa)));
    const __m512i shifted = _mm512_srlv_epi64(spread, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
    return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
  }
  // Low nibbles are elements 0..15, high nibbles 16..31; minus 8.
  AUGUR_ALWAYS_INLINE static const int8_t* codes(const uint8_t* w0, size_t row_bytes, int64_t s,
                                                 int nr, int8_t (*out)[32], size_t* stride) {
    const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    for (int r = 0; r < nr; ++r) {
      const __m128i q = _mm_loadu_si128(
          reinterpret_cast<const __m128i*>(w0 + r * row_bytes + kBlockBytes * s + 2));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low), eight);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight);
      _mm_store_si128(reinterpret_cast<__m128i*>(out[r]), lo);
      _mm_store_si128(reinterpret_cast<__m128i*>(out[r] + 16), hi);
    }
    *stride = 32;
    return out[0];
  }
};

// Block b of a group: C(b) = A(4 + b % 2) B(6 + b % 2), stored to c. The tile intrinsics paste
// their tile numbers into the instruction text, so they must be literals.
#define AUGUR_BLOCK_PRODUCT(TILE_C, TILE_A, TILE_B, a, stride, b, c) \
  do {                                                               \
    _tile_loadd(TILE_A, (a), static_cast<long>(stride));             \
    _tile_loadd(TILE_B, (b), 4 * kTileM);                            \
    _tile_zero(TILE_C);                                              \
    _tile_dpbssd(TILE_C, TILE_A, TILE_B);                            \
    _tile_stored(TILE_C, (c), 4 * kTileM);                           \
  } while (0)

// The block sums of blocks s0 .. s0 + nb - 1 into c[b], and the weight rows' scales into dw[b].
template <class C>
AUGUR_ALWAYS_INLINE void tile_products(const MatmulArgs& a, const uint8_t* w0, int nr,
                                       const int32_t* xp, int64_t s0, int nb,
                                       int8_t (*codes)[2 * kTileRows][32],
                                       int32_t (*c)[kTileRows][kTileM], float (*dw)[2 * kTileRows],
                                       int half) {
  const __mmask16 live = static_cast<__mmask16>((1u << nr) - 1);
  const __m512i pitch =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(a.row_bytes)));
  const int8_t* q[kGroup];
  size_t stride[kGroup];
  for (int b = 0; b < nb; ++b) q[b] = C::codes(w0, a.row_bytes, s0 + b, nr, codes[b], &stride[b]);
  const auto xb = [&](int b) { return xp + (s0 + b) * 8 * kTileM; };
  static_assert(kGroup == 2);
  // The halves of the double buffer use C tiles 0-1 and 2-3, so one group's products need not
  // wait for the float pass to have read the other's.
  if (half == 0) {
    AUGUR_BLOCK_PRODUCT(0, 4, 6, q[0], stride[0], xb(0), c[0][0]);
    if (nb > 1) AUGUR_BLOCK_PRODUCT(1, 5, 7, q[1], stride[1], xb(1), c[1][0]);
  } else {
    AUGUR_BLOCK_PRODUCT(2, 4, 6, q[0], stride[0], xb(0), c[0][0]);
    if (nb > 1) AUGUR_BLOCK_PRODUCT(3, 5, 7, q[1], stride[1], xb(1), c[1][0]);
  }
  for (int b = 0; b < nb; ++b) {
    // The rows' fp16 scales (with the two bytes after them, unused), widened to floats.
    const __m512i halves = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, pitch,
                                                       w0 + C::kBlockBytes * (s0 + b), 1);
    _mm512_store_ps(dw[b], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(halves)));
  }
}

// Asks for the tile's rows kPrefetchBytes ahead of the group starting at block s0: two groups
// ahead, about a memory latency at the rate the tiles consume them (farther, the lines of 16
// rows start to leave L1 before use; 4 KB ahead was 15 % slower).
template <class C>
AUGUR_ALWAYS_INLINE void prefetch_rows(const MatmulArgs& a, const uint8_t* w0, int nr, int64_t s0) {
  for (int r = 0; r < nr; ++r) {
    const char* p = reinterpret_cast<const char*>(w0 + r * a.row_bytes + C::kBlockBytes * s0);
    _mm_prefetch(p + kPrefetchBytes, _MM_HINT_T0);
    _mm_prefetch(p + kPrefetchBytes + 64, _MM_HINT_T0);
    if constexpr (C::kBlockBytes * kGroup > 128)
      _mm_prefetch(p + kPrefetchBytes + 128, _MM_HINT_T0);
  }
}

// The double-buffered block loop both tile kernels share: products(s0, nb, half) issues the tile
// products of blocks s0 .. s0 + nb - 1 into half `half` of the buffers, the next group's before
// the float pass over the current one; then, block by block, each of the 16 accumulators takes
// acc[r] = fma(float(C[r]), scale(half, b, r, dx), acc[r]), dx the block's activation scales.
template <class C, class Products, class Scale>
AUGUR_ALWAYS_INLINE void accumulate_blocks(const MatmulArgs& a, const Scratch& sc,
                                           const uint8_t* w0, int nr, const float* dxp,
                                           Products&& products, Scale&& scale,
                                           __m512 (&acc)[kTileRows]) {
  const int64_t blocks = a.cols / 32;
  const auto group = [blocks](int64_t s0) {
    return static_cast<int>(blocks - s0 < kGroup ? blocks - s0 : kGroup);
  };
#pragma GCC unroll 16
  for (int r = 0; r < kTileRows; ++r) acc[r] = _mm512_setzero_ps();
  int half = 0;
  products(0, group(0), 0);
  for (int64_t s0 = 0; s0 < blocks; s0 += kGroup) {
    if (s0 + kGroup < blocks) {
      prefetch_rows<C>(a, w0, nr, s0 + kGroup);
      products(s0 + kGroup, group(s0 + kGroup), 1 - half);
    }
    const int nb = group(s0);
    for (int b = 0; b < nb; ++b) {
      const __m512 dx = _mm512_loadu_ps(dxp + (s0 + b) * kTileM);
#pragma GCC unroll 16
      for (int r = 0; r < kTileRows; ++r) {
        const __m512 sums = _mm512_cvtepi32_ps(_mm512_load_si512(sc.c[half][b][r]));
        acc[r] = _mm512_fmadd_ps(sums, scale(half, b, r, dx), acc[r]);
      }
    }
    half = 1 - half;
  }
}

// y[m * ldy + r] = dot(weight row r, activation row m0 + m) for r < nr, m < tm.
template <class C>
void amx_tile(const MatmulArgs& a, Scratch& sc, int64_t row, int nr, int64_t m0, int tm) {
  configure_tiles(nr, sc.loaded);
  const int64_t blocks = a.cols / 32;
  const uint8_t* w0 = a.w + row * static_cast<int64_t>(a.row_bytes);
  const int32_t* xp = sc.xp + (m0 / kTileM) * blocks * 8 * kTileM;
  const float* dxp = sc.dxp + (m0 / kTileM) * blocks * kTileM;
  __m512 acc[kTileRows];
  // All 16 rows, whatever nr: rows past nr hold stale sums and zero scales, and are dropped.
  accumulate_blocks<C>(
      a, sc, w0, nr, dxp,
      [&](int64_t s0, int nb, int half) {
        tile_products<C>(a, w0, nr, xp, s0, nb, sc.codes[half], sc.c[half], sc.dw[half], half);
      },
      [&](int half, int b, int r, __m512 dx) {
        return _mm512_mul_ps(_mm512_set1_ps(sc.dw[half][b][r]), dx);
      },
      acc);
  // Transposed through a buffer, so each activation row's nr outputs are one contiguous store
  // (scalar stores a row pitch apart alias in L1).
  alignas(64) float out[kTileRows][kTileM];
#pragma GCC unroll 16
  for (int r = 0; r < kTileRows; ++r) _mm512_store_ps(out[r], acc[r]);
  const __m512i column =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(kTileM));
  const __mmask16 live = static_cast<__mmask16>((1u << nr) - 1);
  float* y = a.y + m0 * a.rows + row;
  for (int m = 0; m < tm; ++m) {
    _mm512_mask_storeu_ps(y + m * a.rows, live, _mm512_i32gather_ps(column, &out[0][m], 4));
  }
}

// The same block sums for a few activation rows without tiles, which cost the same for 1 row as
// for 16: per block, eight vpdpbusd give 16 weight rows' eight lane sums (two rows per register),
// and three levels of unpack-and-add reduce them to one block sum per row, lane i holding row
// kLaneRow[i]. Then the same float chain as the tiles, with a zmm over weight rows:
// acc = fma(float(isum), dw * dx, acc). Used for one or two activation rows (the tiles win from
// three on: 4096 x 4096 Q8_0 from DRAM, one thread, 1.45 ms against 1.8 for M = 1, 1.62 against
// 1.73 for M = 2).

template <class C, int TM>
void vnni_tile(const MatmulArgs& a, const Scratch& sc, int64_t row, int nr, int64_t m0) {
  const int64_t blocks = a.cols / 32;
  const uint8_t* w0 = a.w + row * static_cast<int64_t>(a.row_bytes);
  // Rows past nr repeat the last row (never read past the range) and are dropped at the end.
  const auto lane_row = _mm512_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
  const __m512i clamped = _mm512_min_epi32(lane_row, _mm512_set1_epi32(nr - 1));
  const __m512i offsets =
      _mm512_mullo_epi32(clamped, _mm512_set1_epi32(static_cast<int>(a.row_bytes)));
  const uint8_t* rows[kTileRows];
  for (int r = 0; r < kTileRows; ++r) rows[r] = w0 + (r < nr ? r : nr - 1) * a.row_bytes;
  __m512 acc[TM];
  for (int m = 0; m < TM; ++m) acc[m] = _mm512_setzero_ps();
  for (int64_t s = 0; s < blocks; ++s) {
    const size_t at = C::kBlockBytes * s;
    if (s % 2 == 0) {
      for (int r = 0; r < nr; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(rows[r] + at) + 384, _MM_HINT_T0);
      }
    }
    __m512i u[8];
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) u[p] = C::unsigned_pair(rows[2 * p] + at, rows[2 * p + 1] + at);
    const __m512 dw =
        _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(offsets, w0 + at, 1)));
#pragma GCC unroll 2
    for (int m = 0; m < TM; ++m) {
      const __m512i x = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xq + (m0 + m) * a.cols + 32 * s)));
      __m512i z[8];
#pragma GCC unroll 8
      for (int p = 0; p < 8; ++p) z[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[p], x);
      __m512i t[4];
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        t[q] = _mm512_add_epi32(_mm512_unpacklo_epi32(z[2 * q], z[2 * q + 1]),
                                _mm512_unpackhi_epi32(z[2 * q], z[2 * q + 1]));
      }
      const __m512i u0 =
          _mm512_add_epi32(_mm512_unpacklo_epi64(t[0], t[1]), _mm512_unpackhi_epi64(t[0], t[1]));
      const __m512i u1 =
          _mm512_add_epi32(_mm512_unpacklo_epi64(t[2], t[3]), _mm512_unpackhi_epi64(t[2], t[3]));
      const __m512i sums = _mm512_add_epi32(
          _mm512_add_epi32(_mm512_shuffle_i32x4(u0, u1, 0x88), _mm512_shuffle_i32x4(u0, u1, 0xDD)),
          _mm512_set1_epi32(-C::kBias * sc.xsum[(m0 + m) * blocks + s]));
      const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(a.xd[(m0 + m) * blocks + s]));
      acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), d, acc[m]);
    }
  }
  // Lane i holds row kLaneRow[i]; back to row order.
  const __m512i row_lane = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
  const __mmask16 live = static_cast<__mmask16>((1u << nr) - 1);
  for (int m = 0; m < TM; ++m) {
    _mm512_mask_storeu_ps(a.y + (m0 + m) * a.rows + row, live,
                          _mm512_permutexvar_ps(row_lane, acc[m]));
  }
}

// 32 weight rows (nr0 <= 16 in C tiles 0/2, nr1 in 1/3) times tm <= kPairTm activation rows. Per
// block both halves' products share one B tile and are stored side by side (rows 0-15 in dwords
// 0-7 of a buffer row, rows 16-31 in dwords 8-15), so the float pass runs one zmm per pair of
// weight rows r and r + 16: d = [dw[r] x dx | dw[r + 16] x dx], the same products and chain per
// (row, activation row) as amx_tile and matmul_rows_block_sums.
template <class C>
AUGUR_ALWAYS_INLINE void pair_products(const MatmulArgs& a, const uint8_t* w0, int nr0, int nr1,
                                       const int32_t* xp, int64_t s0, int nb,
                                       int8_t (*codes)[2 * kTileRows][32],
                                       int32_t (*c)[kTileRows][kTileM],
                                       float (*dw)[2 * kTileRows]) {
  const uint8_t* w1 = w0 + kTileRows * static_cast<int64_t>(a.row_bytes);
  const int8_t* q0[kGroup];
  const int8_t* q1[kGroup];
  size_t stride0[kGroup], stride1[kGroup];
  for (int b = 0; b < nb; ++b) {
    q0[b] = C::codes(w0, a.row_bytes, s0 + b, nr0, codes[b], &stride0[b]);
    q1[b] = C::codes(w1, a.row_bytes, s0 + b, nr1, codes[b] + kTileRows, &stride1[b]);
  }
  const auto xb = [&](int b) { return xp + (s0 + b) * 8 * kTileM; };
  static_assert(kGroup == 2);
  _tile_loadd(6, xb(0), 4 * kTileM);
  _tile_loadd(4, q0[0], static_cast<long>(stride0[0]));
  _tile_loadd(5, q1[0], static_cast<long>(stride1[0]));
  _tile_zero(0);
  _tile_zero(1);
  _tile_dpbssd(0, 4, 6);
  _tile_dpbssd(1, 5, 6);
  _tile_stored(0, c[0][0], 4 * kTileM);
  _tile_stored(1, c[0][0] + kPairTm, 4 * kTileM);
  if (nb > 1) {
    _tile_loadd(7, xb(1), 4 * kTileM);
    _tile_loadd(4, q0[1], static_cast<long>(stride0[1]));
    _tile_loadd(5, q1[1], static_cast<long>(stride1[1]));
    _tile_zero(2);
    _tile_zero(3);
    _tile_dpbssd(2, 4, 7);
    _tile_dpbssd(3, 5, 7);
    _tile_stored(2, c[1][0], 4 * kTileM);
    _tile_stored(3, c[1][0] + kPairTm, 4 * kTileM);
  }
  const __m512i pitch =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(a.row_bytes)));
  const __mmask16 live0 = static_cast<__mmask16>((1u << nr0) - 1);
  const __mmask16 live1 = static_cast<__mmask16>((1u << nr1) - 1);
  for (int b = 0; b < nb; ++b) {
    const size_t at = C::kBlockBytes * (s0 + b);
    _mm512_store_ps(dw[b], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_mask_i32gather_epi32(
                               _mm512_setzero_si512(), live0, pitch, w0 + at, 1))));
    _mm512_store_ps(dw[b] + kTileRows,
                    _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_mask_i32gather_epi32(
                        _mm512_setzero_si512(), live1, pitch, w1 + at, 1))));
  }
}

template <class C>
void pair_tile(const MatmulArgs& a, Scratch& sc, int64_t row, int nr, int64_t m0, int tm) {
  const int nr0 = kTileRows, nr1 = nr - kTileRows;
  configure_pair_tiles(nr0, nr1, sc.loaded);
  const int64_t blocks = a.cols / 32;
  const uint8_t* w0 = a.w + row * static_cast<int64_t>(a.row_bytes);
  const int32_t* xp = sc.xp + (m0 / kTileM) * blocks * 8 * kTileM;
  const float* dxp = sc.dxp + (m0 / kTileM) * blocks * kTileM;
  __m512 acc[kTileRows];
  accumulate_blocks<C>(
      a, sc, w0, nr, dxp,
      [&](int64_t s0, int nb, int half) {
        pair_products<C>(a, w0, nr0, nr1, xp, s0, nb, sc.codes[half], sc.c[half], sc.dw[half]);
      },
      [&](int half, int b, int r, __m512 dx) {
        // [dw[r] x dx 0..7 | dw[r + 16] x dx 0..7]
        const __m512 dw = _mm512_shuffle_f32x4(_mm512_set1_ps(sc.dw[half][b][r]),
                                               _mm512_set1_ps(sc.dw[half][b][kTileRows + r]), 0);
        return _mm512_mul_ps(dw, _mm512_shuffle_f32x4(dx, dx, 0x44));
      },
      acc);
  alignas(64) float out[kTileRows][kTileM];
#pragma GCC unroll 16
  for (int r = 0; r < kTileRows; ++r) _mm512_store_ps(out[r], acc[r]);
  const __m512i column =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(kTileM));
  const __mmask16 live1 = static_cast<__mmask16>((1u << nr1) - 1);
  float* y = a.y + m0 * a.rows + row;
  for (int m = 0; m < tm; ++m) {
    _mm512_storeu_ps(y + m * a.rows, _mm512_i32gather_ps(column, &out[0][m], 4));
    _mm512_mask_storeu_ps(y + m * a.rows + kTileRows, live1,
                          _mm512_i32gather_ps(column, &out[0][kPairTm + m], 4));
  }
}

template <class C>
void run_amx(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  Scratch& sc = scratch();
  pack_activations(a, sc);
  for_each_tile(
      a, row_begin, row_end, kTileM,
      [](int tm) { return tm > kVnniMaxTm && tm <= kPairTm ? 2 * kTileRows : kTileRows; },
      [&](int tm, int64_t row, int nr, int64_t m0) {
        static_assert(kVnniMaxTm == 2);
        if (tm == 1) return vnni_tile<C, 1>(a, sc, row, nr, m0);
        if (tm == 2) return vnni_tile<C, 2>(a, sc, row, nr, m0);
        if (nr > kTileRows) return pair_tile<C>(a, sc, row, nr, m0, tm);
        amx_tile<C>(a, sc, row, nr, m0, tm);
      });
  // Lets the OS skip saving the 8 KB of tile data while this thread does other work.
  _tile_release();
  sc.loaded = -1;
}

}  // namespace

void matmul_rows_amx(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::Q8_0: return run_amx<CodesQ8_0>(a, row_begin, row_end);
    case TensorType::Q4_0: return run_amx<CodesQ4_0>(a, row_begin, row_end);
    default: return matmul_rows_avx512(a, row_begin, row_end);
  }
}

#undef AUGUR_ALWAYS_INLINE
#undef AUGUR_BLOCK_PRODUCT

#else  // not x86-64: isa.cpp never selects this path

void matmul_rows_amx(const MatmulArgs&, int64_t, int64_t) {
  AUGUR_CHECK(false, "the AMX path exists only on x86-64");
}

#endif

}  // namespace augur::kernels::detail
