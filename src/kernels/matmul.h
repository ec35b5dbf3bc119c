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
// the weight rows statically. Weights are decoded exactly (tensor::dequantize_row's values) and
// accumulated in f32; activations are never quantized. Throws Unsupported for a type without a
// decoder. Allocates nothing.
void matmul(const tensor::Matrix& w, const float* x, int64_t M, float* y, ThreadPool& pool);

}  // namespace augur::kernels
