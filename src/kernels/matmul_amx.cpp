// AMX-INT8 matmul path: Q8_0/Q4_0 weights times Q8_0 activations with `tdpbssd` tiles, for the
// batch sizes where that beats the AVX-512 VNNI kernels (kAmxMinRows: on the CPU measured, none);
// everything else runs matmul_rows_avx512.
//
// Bit-identical to the scalar path, which for each (weight row r, activation row m) keeps eight
// float lanes and adds, block by block, acc[lane] = fma(dw * dx, sum, acc[lane]) where `sum` is the
// exact int32 dot product of the block's four elements 4 lane .. 4 lane + 3. A tdpbssd reduces over
// the whole K of its tiles, so K is made exactly those four bytes: for block s and lane j,
//   A (weights):     nr <= 16 rows of 4 bytes, weight row r's codes 4j..4j+3 of block s — read
//                    straight from a Q8_0 row with the row pitch as tile stride, from a small
//                    per-tile buffer of unpacked codes for Q4_0;
//   B (activations): 1 row of tm <= 16 dwords, activation row m's codes 4j..4j+3 of block s
//                    (packed once per call by pack_activations, [m-tile][block][lane][16]);
//   C = A B:         C[r][m] = that lane's exact int32 sum for all nr x tm pairs at once.
// The eight lanes' C tiles of a few blocks are stored to a buffer, then each weight row takes a
// float pass in block order with a zmm over activation rows m: d = dw[r] * dx[m, s] (one rounding,
// as in the scalar kernel), acc[r][lane] = fma(d, float(C), acc[r][lane]). The lanes are summed at
// the end in the scalar kernel's order. Every (r, m) pair is reduced in the same order whatever
// tm and nr are, so the result is batch-invariant and equals the scalar and AVX-512 kernels'.
// Compiled with AMX and AVX-512 flags and only called when cpu_supports(Isa::kAmx) (which also
// obtained Linux's permission for the tile data), so it uses file-local helpers only.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

inline float half_to_float(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return _cvtsh_ss(v);
}

// Activation rows per tile (the 16 dword columns of C) and weight rows per tile (C's 16 rows).
constexpr int kTileM = 16;
constexpr int kTileRows = 16;
// Blocks whose C tiles are buffered before a float pass over them: the pass loads and stores each
// accumulator once per kBatch blocks. Double-buffered, 2 x 2 x 8 lanes x 1 KB = 32 KB, with the
// accumulators (8 KB) in L1.
constexpr int kBatch = 2;

// Palette 1 tile configuration (the layout ldtilecfg reads).
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Tiles 0-3 hold C (lanes alternate between them so one lane's store overlaps the next product),
// 4-5 A and 6-7 B.
// `loaded` caches the shape this thread's tiles hold ({-1, -1} after _tile_release).
void configure_tiles(int nr, int tm, int (&loaded)[2]) {
  if (nr == loaded[0] && tm == loaded[1]) return;
  TileConfig config{};
  config.palette_id = 1;
  for (int t = 0; t < 4; ++t) {
    config.rows[t] = static_cast<uint8_t>(nr);
    config.colsb[t] = static_cast<uint16_t>(4 * tm);
  }
  for (int t = 4; t < 6; ++t) {
    config.rows[t] = static_cast<uint8_t>(nr);
    config.colsb[t] = 4;
  }
  for (int t = 6; t < 8; ++t) {
    config.rows[t] = 1;
    config.colsb[t] = static_cast<uint16_t>(4 * tm);
  }
  // Not _tile_loadconfig: GCC 12's version tells the compiler it reads only the first 8 bytes, so
  // the stores of rows and colsb are dropped as dead.
  asm volatile("ldtilecfg %0" : : "m"(config) : "memory");
  loaded[0] = nr;
  loaded[1] = tm;
}

// Per worker thread, grown to the largest call seen: the kernels allocate nothing once warm.
struct Scratch {
  // Not std::vector: its members are inline templates shared with other files, which the linker
  // could take from this AMX-flagged object for everyone (docs/kernels.md, "ODR hazard").
  int32_t* xp = nullptr;  // activation codes, [m-tile][block][lane][kTileM] dwords
  float* dxp = nullptr;   // activation scales, [m-tile][block][kTileM]
  size_t capacity = 0;    // m-tiles x blocks that xp and dxp hold
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    delete[] xp;
    delete[] dxp;
  }
  alignas(64) int32_t c[2][kBatch * 8][kTileRows][kTileM];  // double-buffered tile products
  alignas(64) float acc[kTileRows][8][kTileM];
  alignas(64) int8_t codes[2][kBatch][kTileRows][32];  // unpacked Q4_0 codes
  int loaded[2] = {-1, -1};                            // configure_tiles' cache
};

// On the heap, made on a thread's first AMX call: a thread_local Scratch would add its 40 KB to the
// static TLS of every thread of the process.
Scratch& scratch() {
  thread_local std::unique_ptr<Scratch> s;
  if (!s) s = std::make_unique<Scratch>();
  return *s;
}

// xp / dxp for every activation row, zero past M (those columns of C are never read).
void pack_activations(const MatmulArgs& a, Scratch& sc) {
  const int64_t blocks = a.cols / 32, tiles = (a.M + kTileM - 1) / kTileM;
  const auto need = static_cast<size_t>(tiles * blocks);
  if (need > sc.capacity) {
    delete[] sc.xp;
    delete[] sc.dxp;
    sc.xp = nullptr;
    sc.dxp = nullptr;
    sc.capacity = 0;
    sc.xp = new int32_t[need * 8 * kTileM];
    sc.dxp = new float[need * kTileM];
    sc.capacity = need;
  }
  const __m512i m_index =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(a.cols)));
  const __m512i d_index =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(blocks)));
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t m0 = t * kTileM;
    const int tm = static_cast<int>(a.M - m0 < kTileM ? a.M - m0 : kTileM);
    const __mmask16 live = static_cast<__mmask16>((1u << tm) - 1);
    const int8_t* xq = a.xq + m0 * a.cols;
    const float* xd = a.xd + m0 * blocks;
    int32_t* xp = sc.xp + t * blocks * 8 * kTileM;
    float* dxp = sc.dxp + t * blocks * kTileM;
    for (int64_t s = 0; s < blocks; ++s) {
      for (int j = 0; j < 8; ++j) {
        const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, m_index,
                                                      xq + 32 * s + 4 * j, 1);
        _mm512_storeu_si512(xp + (s * 8 + j) * kTileM, v);
      }
      _mm512_storeu_ps(dxp + s * kTileM,
                       _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, d_index, xd + s, 4));
    }
  }
}

// Where tdpbssd finds a weight row's 32 codes of block s, and that row's scale.
struct CodesQ8_0 {
  static constexpr size_t kBlockBytes = sizeof(tensor::BlockQ8_0);
  // Q8_0 codes are read in place: base of row 0's codes, rows a pitch apart.
  AUGUR_ALWAYS_INLINE static const int8_t* codes(const uint8_t* w0, size_t row_bytes, int64_t s,
                                                 int, int8_t (*)[32], size_t* stride) {
    *stride = row_bytes;
    return reinterpret_cast<const int8_t*>(w0 + kBlockBytes * s + 2);
  }
};

struct CodesQ4_0 {
  static constexpr size_t kBlockBytes = sizeof(tensor::BlockQ4_0);
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

// Lane J of block s: C(J % 4) = A(4 + J % 2) B(6 + J % 2), stored to c. The tile intrinsics paste
// their tile numbers into the instruction text, so they must be literals.
#define AUGUR_LANE_PRODUCT(J, TILE_C, TILE_A, TILE_B, a, stride, b, c) \
  do {                                                                 \
    _tile_loadd(TILE_A, (a) + 4 * (J), static_cast<long>(stride));     \
    _tile_loadd(TILE_B, (b) + (J)*kTileM, 64);                         \
    _tile_zero(TILE_C);                                                \
    _tile_dpbssd(TILE_C, TILE_A, TILE_B);                              \
    _tile_stored(TILE_C, (c), kTileM * 4);                             \
  } while (0)

// The tile products of blocks s0 .. s0 + nb - 1 into c[8 b + lane].
template <class C>
AUGUR_ALWAYS_INLINE void tile_products(const MatmulArgs& a, const uint8_t* w0, int nr,
                                       const int32_t* xp, int64_t s0, int nb,
                                       int8_t (*codes)[kTileRows][32],
                                       int32_t (*c)[kTileRows][kTileM]) {
  for (int b = 0; b < nb; ++b) {
    size_t stride = 0;
    const int8_t* q = C::codes(w0, a.row_bytes, s0 + b, nr, codes[b], &stride);
    const int32_t* xb = xp + (s0 + b) * 8 * kTileM;
    int32_t(*cb)[kTileRows][kTileM] = c + 8 * b;
    AUGUR_LANE_PRODUCT(0, 0, 4, 6, q, stride, xb, cb[0][0]);
    AUGUR_LANE_PRODUCT(1, 1, 5, 7, q, stride, xb, cb[1][0]);
    AUGUR_LANE_PRODUCT(2, 2, 4, 6, q, stride, xb, cb[2][0]);
    AUGUR_LANE_PRODUCT(3, 3, 5, 7, q, stride, xb, cb[3][0]);
    AUGUR_LANE_PRODUCT(4, 0, 4, 6, q, stride, xb, cb[4][0]);
    AUGUR_LANE_PRODUCT(5, 1, 5, 7, q, stride, xb, cb[5][0]);
    AUGUR_LANE_PRODUCT(6, 2, 4, 6, q, stride, xb, cb[6][0]);
    AUGUR_LANE_PRODUCT(7, 3, 5, 7, q, stride, xb, cb[7][0]);
  }
}

// The float pass over blocks s0 .. s0 + nb - 1: for each weight row r, in block order,
// acc[r][lane] = fma(dw[r] * dx[m], float(c[8 b + lane][r][m]), acc[r][lane]) for 16 m at once.
template <class C>
AUGUR_ALWAYS_INLINE void scale_and_accumulate(const MatmulArgs& a, const uint8_t* w0, int nr,
                                              const float* dxp, int64_t s0, int nb,
                                              const int32_t (*c)[kTileRows][kTileM],
                                              float (*acc_rows)[8][kTileM]) {
  for (int r = 0; r < nr; ++r) {
    const uint8_t* wrow = w0 + r * a.row_bytes;
    // The rows' streams are asked for 4 KB ahead.
    for (size_t at = 0; at < static_cast<size_t>(nb) * C::kBlockBytes; at += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(wrow + C::kBlockBytes * s0 + at) + 4096,
                   _MM_HINT_T0);
    }
    __m512 acc[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc[j] = _mm512_load_ps(acc_rows[r][j]);
    for (int b = 0; b < nb; ++b) {
      const int64_t s = s0 + b;
      const __m512 d = _mm512_mul_ps(_mm512_set1_ps(half_to_float(wrow + C::kBlockBytes * s)),
                                     _mm512_loadu_ps(dxp + s * kTileM));
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512 sums = _mm512_cvtepi32_ps(_mm512_load_si512(c[8 * b + j][r]));
        acc[j] = _mm512_fmadd_ps(d, sums, acc[j]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) _mm512_store_ps(acc_rows[r][j], acc[j]);
  }
}

// y[m * ldy + r] = dot(weight row r, activation row m0 + m) for r < nr, m < tm. The tile products
// of the next kBatch blocks are issued before the float pass over the current ones, into the other
// half of a double buffer, so the two overlap.
template <class C>
void amx_tile(const MatmulArgs& a, Scratch& sc, int64_t row, int nr, int64_t m0, int tm) {
  configure_tiles(nr, tm, sc.loaded);
  const int64_t blocks = a.cols / 32;
  const uint8_t* w0 = a.w + row * static_cast<int64_t>(a.row_bytes);
  const int32_t* xp = sc.xp + (m0 / kTileM) * blocks * 8 * kTileM;
  const float* dxp = sc.dxp + (m0 / kTileM) * blocks * kTileM;
  for (int r = 0; r < nr; ++r) {
    for (int j = 0; j < 8; ++j) _mm512_store_ps(sc.acc[r][j], _mm512_setzero_ps());
  }
  const auto batch = [blocks](int64_t s0) {
    return static_cast<int>(blocks - s0 < kBatch ? blocks - s0 : kBatch);
  };
  int half = 0;
  tile_products<C>(a, w0, nr, xp, 0, batch(0), sc.codes[0], sc.c[0]);
  for (int64_t s0 = 0; s0 < blocks; s0 += kBatch) {
    if (s0 + kBatch < blocks) {
      tile_products<C>(a, w0, nr, xp, s0 + kBatch, batch(s0 + kBatch), sc.codes[1 - half],
                       sc.c[1 - half]);
    }
    scale_and_accumulate<C>(a, w0, nr, dxp, s0, batch(s0), sc.c[half], sc.acc);
    half = 1 - half;
  }
  float* y = a.y + m0 * a.rows + row;
  for (int r = 0; r < nr; ++r) {
    const float(*acc)[kTileM] = sc.acc[r];
    const __m512 sum =
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_load_ps(acc[0]), _mm512_load_ps(acc[4])),
                                    _mm512_add_ps(_mm512_load_ps(acc[2]), _mm512_load_ps(acc[6]))),
                      _mm512_add_ps(_mm512_add_ps(_mm512_load_ps(acc[1]), _mm512_load_ps(acc[5])),
                                    _mm512_add_ps(_mm512_load_ps(acc[3]), _mm512_load_ps(acc[7]))));
    alignas(64) float out[kTileM];
    _mm512_store_ps(out, sum);
    for (int m = 0; m < tm; ++m) y[m * a.rows + r] = out[m];
  }
}

template <class C>
void run_amx(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  Scratch& sc = scratch();
  pack_activations(a, sc);
  for_each_tile(
      a, row_begin, row_end, kTileM, [](int) { return kTileRows; },
      [&](int tm, int64_t row, int nr, int64_t m0) { amx_tile<C>(a, sc, row, nr, m0, tm); });
  // Lets the OS skip saving the 8 KB of tile data while this thread does other work.
  _tile_release();
  sc.loaded[0] = sc.loaded[1] = -1;
}

}  // namespace

void matmul_rows_amx_tiles(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::Q8_0: return run_amx<CodesQ8_0>(a, row_begin, row_end);
    case TensorType::Q4_0: return run_amx<CodesQ4_0>(a, row_begin, row_end);
    default: AUGUR_CHECK(false, "the AMX tiles take Q8_0 and Q4_0 weights only");
  }
}

void matmul_rows_amx(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  const bool integer = a.type == TensorType::Q8_0 || a.type == TensorType::Q4_0;
  if (integer && a.M >= kAmxMinRows) return matmul_rows_amx_tiles(a, row_begin, row_end);
  return matmul_rows_avx512(a, row_begin, row_end);
}

#undef AUGUR_ALWAYS_INLINE
#undef AUGUR_LANE_PRODUCT

#else  // not x86-64: isa.cpp never selects this path

void matmul_rows_amx_tiles(const MatmulArgs&, int64_t, int64_t) {
  AUGUR_CHECK(false, "the AMX path exists only on x86-64");
}

void matmul_rows_amx(const MatmulArgs&, int64_t, int64_t) {
  AUGUR_CHECK(false, "the AMX path exists only on x86-64");
}

#endif

}  // namespace augur::kernels::detail
