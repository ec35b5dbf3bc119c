// Weights repacked at load for the kernel that reads them. A Q8_0 matrix on the avx512 path is
// read 16 rows at a time with one row per lane of a zmm register (matmul_avx512.cpp); in the GGUF
// layout those rows are 16 streams a row pitch apart and must be transposed block by block on
// every call, which costs more than the products at small batches. Packed once, they are one
// contiguous stream already in register order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/matrix.h"

namespace augur::kernels {

// The packed Q8_0 layout: rows in groups of 16 (the last padded with zero rows); for group g and
// block s of `blocks` per row,
// - codes at byte (g * blocks + s) * 512: eight 64-byte registers, register j holding codes
//   4j..4j+3 of row 16g + i in dword i, each as an unsigned byte (code + 128, what vpdpbusd
//   multiplies by signed activation codes);
// - scales at byte groups * blocks * 512 + (g * blocks + s) * 32: the 16 rows' fp16 block scales.
inline constexpr int kPackedRows = 16;
size_t packed_q8_0_bytes(int64_t rows, int64_t cols);
// Writes w (Q8_0) in the packed layout to out (packed_q8_0_bytes(w.rows, w.cols) bytes).
void pack_q8_0(const tensor::Matrix& w, uint8_t* out);

// w with `packed` set when the kernel path in use reads a packed layout of its type (Q8_0 on
// avx512), else w unchanged. A matrix packed for one path still runs on every other path, which
// reads `data`.
tensor::Matrix with_packed_weights(tensor::Matrix w);

}  // namespace augur::kernels
