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

// The 16-lane layout (Layout::kLanes16): rows in groups of 16 (the last padded with zero rows); for
// group g and block s of `blocks` per row, `code_bytes` (packed_code_bytes) of codes at byte (g *
// blocks + s) * code_bytes, in 64-byte registers whose dword i belongs to row 16g + i, and the 16
// rows' fp16 block scales at byte groups * blocks * code_bytes + (g * blocks + s) * 32.
// - Q8_0: eight registers, register j holding codes 4j..4j+3 as unsigned bytes (code + 128, what
//   vpdpbusd multiplies by signed activation codes);
// - Q4_0: four registers, register k holding the block's packed bytes 4k..4k+3 (elements 4k..4k+3
//   in the low nibbles, 4k+16..4k+19 in the high ones; each nibble is code + 8).
inline constexpr int kPackedRows = 16;
// Code bytes per group and block for a type with a packed layout (Q8_0, Q4_0), else 0.
size_t packed_code_bytes(gguf::TensorType type);
size_t packed_bytes(gguf::TensorType type, int64_t rows, int64_t cols);
// Writes w (Q8_0 or Q4_0) in its packed layout to out (packed_bytes(...) bytes), split over
// `threads` threads (0: one below 8 MB, else one per core); the bytes do not depend on it.
void pack_rows(const tensor::Matrix& w, uint8_t* out, int threads = 0);

// The scale-group layout (Layout::kScaleGroups), which the avx2 path reads for Q8_0, Q4_0 and
// Q5_0: the same bytes per row as GGUF's (row_bytes), but each run of eight whole blocks holds the
// eight fp16 scales first (16 bytes) and then the eight payloads (each block's bytes after its
// scale, in order); blocks after the last whole eight stay as they are. The kernel then loads the
// eight scales of a step as one vector instead of gathering them from eight blocks, which is a
// tenth of the kernel's instructions at a few activation rows (docs/kernels.md).
bool has_scale_groups(gguf::TensorType type);
// Writes w (has_scale_groups) in the scale-group layout to out (w.rows * w.row_bytes bytes).
void pack_scale_groups(const tensor::Matrix& w, uint8_t* out);

// w with `packed` and `packed_layout` set when the kernel path in use reads a packed layout of its
// type (Q8_0 and Q4_0 on avx512: kLanes16; Q8_0, Q4_0 and Q5_0 on avx2: kScaleGroups), else w
// unchanged. A matrix packed for one path still runs on every other path, which reads `data`.
tensor::Matrix with_packed_weights(tensor::Matrix w);

}  // namespace augur::kernels
