// The block-sum order of Q8_0/Q4_0 weights times Q8_0 activations (matmul_kernels.h, "Two orders")
// in portable code: per (weight row, activation row), acc = fma(float(block's exact int32 sum),
// dw * dx, acc) in block order. Plain loops: it defines the arithmetic the AVX-512 and AMX kernels
// must equal bit for bit, and is not a dispatched path.
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "tensor/block_decode.h"
#include "tensor/blocks.h"
#include "tensor/matrix.h"

namespace augur::kernels::detail {

void matmul_rows_block_sums(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  AUGUR_CHECK(a.type == gguf::TensorType::Q8_0 || a.type == gguf::TensorType::Q4_0,
              "block sums are defined for Q8_0 and Q4_0 weights only");
  const int64_t blocks = a.cols / 32;
  int8_t q[32];
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = a.w + r * static_cast<int64_t>(a.row_bytes);
    for (int64_t m = 0; m < a.M; ++m) {
      float acc = 0.0f;
      for (int64_t s = 0; s < blocks; ++s) {
        const float dw = tensor::block_codes_q8_0_q4_0(a.type, row, s, q);
        const int8_t* x = a.xq + m * a.cols + 32 * s;
        int32_t sum = 0;
        for (int i = 0; i < 32; ++i) sum += int32_t{q[i]} * int32_t{x[i]};
        acc = std::fmaf(static_cast<float>(sum), dw * a.xd[m * blocks + s], acc);
      }
      a.y[m * a.rows + r] = acc;
    }
  }
}

}  // namespace augur::kernels::detail
