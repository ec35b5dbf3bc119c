// Weight-times-activations product, the one kernel a forward pass spends its time in.
// Owns the split of weight rows over the pool and the ISA dispatch; per-ISA loops live in
// matmul_scalar.cpp and matmul_avx2.cpp.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/isa.h"
#include "kernels/thread_pool.h"
#include "tensor/matrix.h"

namespace augur::kernels {

// y[m, r] = sum_c W[r, c] * x[m, c]  for m < M, r < w.rows.
// x: [M, w.cols] row-major f32;  y: [M, w.rows] row-major f32 (must not alias x).
// Streams each weight row once for all M rows (tiles of up to 8 activation rows reuse a weight
// row while it sits in L1), so verifying M = k+1 rows costs little more than one. Threads split
// the weight rows statically. Q8_0/Q4_0 weights meet Q8_0-quantized activations in exact integer
// products (IntegerOrder below); other weights are decoded exactly (tensor::dequantize_row's
// values) and accumulated in f32 with f32 activations. Throws Unsupported for a type without a
// decoder. Allocates nothing.
void matmul(const tensor::Matrix& w, const float* x, int64_t M, float* y, ThreadPool& pool);

// Where the exact integer sums of Q8_0/Q4_0 weights times Q8_0 activations become floats on a
// path: eight lane sums per block accumulated lane by lane (ggml's x86 AVX2 vec_dot, which
// llama.cpp's reference logits in the fixtures use: scalar, avx2), or one sum per block (ggml's
// reference vec_dot and its AMX kernels: avx512 and amx, which is what lets one register or tile
// hold 16 weight rows' sums). Each is batch-invariant; the two differ in the last bits of a dot
// product.
enum class IntegerOrder { kLaneSums, kBlockSums };
IntegerOrder integer_order(Isa isa);

}  // namespace augur::kernels
