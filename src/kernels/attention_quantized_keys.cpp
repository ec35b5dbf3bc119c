#include "kernels/attention_quantized_keys.h"

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "tensor/block_decode.h"
#include "tensor/blocks.h"
#include "tensor/matrix.h"

namespace augur::kernels {

void attention_scores_q8(gguf::TensorType key_type, const int8_t* q_codes, const float* q_scales,
                         int64_t n_queries, const uint8_t* keys, size_t key_row_bytes,
                         int64_t n_keys, int64_t head_dim, float scale, float* out) {
  AUGUR_CHECK(key_type == gguf::TensorType::Q8_0 || key_type == gguf::TensorType::Q4_0,
              "quantized-key scores are defined for Q8_0 and Q4_0 keys only");
  const int64_t blocks = head_dim / 32;
  int8_t codes[32];
  for (int64_t key = 0; key < n_keys; ++key) {
    const uint8_t* row = keys + static_cast<size_t>(key) * key_row_bytes;
    for (int64_t m = 0; m < n_queries; ++m) out[m * n_keys + key] = 0.0f;
    // Each block's codes are decoded once for every query; each query keeps its own chain.
    for (int64_t block = 0; block < blocks; ++block) {
      const float d_k = tensor::block_codes_q8_0_q4_0(key_type, row, block, codes);
      for (int64_t m = 0; m < n_queries; ++m) {
        const int8_t* q = q_codes + m * head_dim + 32 * block;
        int32_t sum = 0;
        for (int i = 0; i < 32; ++i) sum += int32_t{codes[i]} * int32_t{q[i]};
        float& acc = out[m * n_keys + key];
        acc = std::fmaf(static_cast<float>(sum), d_k * q_scales[m * blocks + block], acc);
      }
    }
    for (int64_t m = 0; m < n_queries; ++m) out[m * n_keys + key] *= scale;
  }
}

}  // namespace augur::kernels
