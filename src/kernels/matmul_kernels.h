// Internal to kernels/: the per-ISA row kernels behind matmul() and the tiling they share.
// Included by ISA-specific files (*_avx2.cpp, *_avx512.cpp, *_amx.cpp), so it holds plain data,
// declarations and templates that those files instantiate with their own file-local types only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"

namespace augur::kernels::detail {

struct MatmulArgs {
  gguf::TensorType type;  // one with a decoder
  const uint8_t* w;       // [rows, row_bytes]
  size_t row_bytes;
  int64_t rows, cols;
  const float* x;  // [M, cols]
  int64_t M;
  float* y;  // [M, rows]
  // Quantized activations, null for float weights:
  // - Q8_0/Q4_0/Q5_0 weights (uses_q8_activations): x by quantize_rows_q8_0, codes xq [M, cols]
  //   and block scales xd [M, cols / 32];
  // - Q4_K/Q5_K/Q6_K weights (uses_q8_k_activations): x by quantize_rows_q8_k, codes xq [M, cols],
  //   super-block scales xd [M, cols / 256] and sums of 16 codes xbsums [M, cols / 16].
  const int8_t* xq = nullptr;
  const float* xd = nullptr;
  const int16_t* xbsums = nullptr;
  // Q8_0/Q4_0 weights on the avx512 path: the same activations in tiles of 16 rows, block-major
  // within a tile (blocked_index), so that what one tile reads of a block is adjacent and the
  // whole tile is one contiguous run (rows a pitch of 4 KB apart would fall in one L1 set): codes
  // xq_blocked (32 per index), scales xd_blocked and each block's bias correction xbias_blocked,
  // -unsigned_weight_bias(type) * (sum of its codes), ready to start a block sum from.
  const int8_t* xq_blocked = nullptr;
  const float* xd_blocked = nullptr;
  const int32_t* xbias_blocked = nullptr;
  // The same weights in one of kernels/packed_weights.h's layouts, or null: Q8_0/Q4_0 on the
  // avx512 path in the 16-lane layout (row ranges then start at multiples of kPackedRows), and
  // Q8_0/Q4_0/Q5_0 on the avx2 path in the scale-group layout (row_bytes apart, like w).
  const uint8_t* packed = nullptr;
};

// Activation rows per tile of the blocked activations, and the index of (row m, block s) among
// M rows of `blocks` blocks: [M / 16 tiles][blocks][min(M, 16)].
inline constexpr int64_t kBlockedTileRows = 16;
inline int64_t blocked_index(int64_t M, int64_t blocks, int64_t m, int64_t s) {
  const int64_t rows = M < kBlockedTileRows ? M : kBlockedTileRows;
  return (m / kBlockedTileRows * blocks + s) * rows + m % kBlockedTileRows;
}
inline int64_t blocked_size(int64_t M, int64_t blocks) {
  const int64_t rows = M < kBlockedTileRows ? M : kBlockedTileRows;
  return (M + kBlockedTileRows - 1) / kBlockedTileRows * blocks * rows;
}

// What the avx512 kernels add to each Q8_0/Q4_0 weight code to make it an unsigned byte for
// vpdpbusd (Q4_0's nibbles are their codes + 8 already); 0 for other types.
inline constexpr int32_t unsigned_weight_bias(gguf::TensorType type) {
  return type == gguf::TensorType::Q8_0 ? 128 : type == gguf::TensorType::Q4_0 ? 8 : 0;
}

// Computes y[m, r] for r in [row_begin, row_end) and every m.
void matmul_rows_scalar(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
void matmul_rows_avx2(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// Q8_0/Q4_0 in AVX-512 VNNI, block sums (from `packed` when set), F32/F16/BF16 to
// matmul_rows_float_avx512, Q4_K/Q5_K/Q6_K to matmul_rows_kquant_avx512, Q5_0 to
// matmul_rows_avx2.
void matmul_rows_avx512(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// Q4_K/Q5_K/Q6_K only, in AVX-512 VNNI (matmul_kquant_avx512.cpp): bitwise the AVX2 kernel's
// results.
void matmul_rows_kquant_avx512(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// F32/F16/BF16 only, in AVX-512 (matmul_float_avx512.cpp): bitwise the AVX2 float kernel's results.
void matmul_rows_float_avx512(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// Two orders for Q8_0/Q4_0 weights times Q8_0 activations. Both take exact int32 sums of code
// products and differ only in where they become floats:
// - lane sums (scalar, avx2): per (weight row, activation row), eight float lanes, lane j
//   adding fma(dw * dx, sum of elements 4j..4j+3, lane j) block by block, summed at the end; ggml's
//   x86 AVX2 vec_dot_q8_0_q8_0 operation for operation (what llama.cpp runs on the fixtures' CPU);
// - block sums (avx512, amx): one float chain adding fma(float(sum of the block's 32 products),
//   dw * dx, acc) block by block; ggml's reference vec_dot_q8_0_q8_0 / q4_0_q8_0 (with
//   contraction) and its AMX kernels. One int32 per block is what lets AMX tiles do the products
//   (lane sums would need eight tile products and stores per block) and one zmm hold 16 weight
//   rows' sums (docs/kernels.md, "The AMX-INT8 path", "The AVX-512 path").
// Each order is batch-invariant on its own; the two differ in the last bits.
// Q8_0/Q4_0 in AMX-INT8 tiles, block sums, at every M; everything else to matmul_rows_avx512.
void matmul_rows_amx(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// The block-sum order in portable code (Q8_0/Q4_0 only): the definition the avx512 and amx paths
// are tested against bit for bit.
void matmul_rows_block_sums(const MatmulArgs& a, int64_t row_begin, int64_t row_end);

// For M > kMaxTileRows, weight rows are taken in chunks of about this many bytes: each chunk stays
// in L1 while every tile of activation rows passes over it, and each tile of activation rows stays
// in L2 while it meets every row of the chunk.
inline constexpr size_t kChunkBytes = 16 * 1024;

// Calls tile(tm, row, nr, m0) for blocks of nr <= rows_for(tm) consecutive weight rows in
// [row_begin, row_end) and every tile of tm <= max_tm activation rows starting at m0, in a
// cache-friendly order: M <= max_tm is one tile streaming the weights once; a larger M is cut
// into tiles of max_tm rows that meet the weights chunk by chunk. Grouping weight rows gives a
// kernel independent FMA chains without splitting any one dot product into several accumulators, so
// a (weight row, activation row) pair is reduced in the same order whatever the block shape (batch
// invariance).
template <class RowsFor, class Tile>
void for_each_tile(const MatmulArgs& a, int64_t row_begin, int64_t row_end, int max_tm,
                   RowsFor&& rows_for, Tile&& tile) {
  const auto blocks = [&](int tm, int64_t begin, int64_t end, int64_t m0) {
    const int64_t per = rows_for(tm);
    for (int64_t row = begin; row < end; row += per) {
      tile(tm, row, static_cast<int>(end - row < per ? end - row : per), m0);
    }
  };
  if (a.M <= max_tm) {
    blocks(static_cast<int>(a.M), row_begin, row_end, 0);
    return;
  }
  // A whole number of full row blocks per chunk, so no chunk ends in a narrower block.
  const int64_t per = rows_for(max_tm);
  const auto fit = static_cast<int64_t>(a.row_bytes >= kChunkBytes ? 1 : kChunkBytes / a.row_bytes);
  const int64_t chunk_rows = fit < per ? per : fit / per * per;
  for (int64_t chunk = row_begin; chunk < row_end; chunk += chunk_rows) {
    const int64_t chunk_end = row_end - chunk < chunk_rows ? row_end : chunk + chunk_rows;
    for (int64_t m0 = 0; m0 < a.M; m0 += max_tm) {
      const int tm = static_cast<int>(a.M - m0 < max_tm ? a.M - m0 : max_tm);
      blocks(tm, chunk, chunk_end, m0);
    }
  }
}

// Runs tile family K (kMaxTm, rows_for, tile<TM, NR>) over rows [row_begin, row_end): every
// (tm, nr) shape for_each_tile hands out goes to the kernel instantiated for exactly that shape.
// ISA-neutral; each *_<isa>.cpp instantiates it with tile types of its own anonymous namespace,
// so every instantiation is local to the file compiled with that ISA's flags.
template <class K, int TM, int NR = K::rows_for(TM)>
void run_block(const MatmulArgs& a, int nr, int64_t row, int64_t m0) {
  if constexpr (NR > 1) {
    if (nr < NR) return run_block<K, TM, NR - 1>(a, nr, row, m0);
  }
  K::template tile<TM, NR>(a, row, m0);
}

template <class K, int TM = K::kMaxTm>
void run_tile(const MatmulArgs& a, int tm, int nr, int64_t row, int64_t m0) {
  if constexpr (TM > 1) {
    if (tm < TM) return run_tile<K, TM - 1>(a, tm, nr, row, m0);
  }
  run_block<K, TM>(a, nr, row, m0);
}

template <class K>
void run_tiles(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  for_each_tile(a, row_begin, row_end, K::kMaxTm, K::rows_for,
                [&a](int tm, int64_t row, int nr, int64_t m0) { run_tile<K>(a, tm, nr, row, m0); });
}

}  // namespace augur::kernels::detail
