// Attention scores over Q8_0 / Q4_0 key rows, as llama.cpp computes KQ for a quantized K cache
// (mul_mat(K, q) without flash attention, kq_vec_dot in ggml-cpu's flash_attn_ext_f16 with it):
// the query is quantized to Q8_0 (K's vec_dot_type; kernels/quantize_activations.h) and each
// (query, key) dot is exact int32 block sums made float block by block, ggml's reference
// vec_dot_q8_0_q8_0 / vec_dot_q4_0_q8_0 order:
//   acc = fma(float(sum of the block's 32 code products), d_k * d_q, acc)   for each block in order
//   score = acc * scale
// (ggml's x86 AVX2 vec_dot keeps eight lane sums per block instead: the two differ in last bits.)
// A score depends only on its query and key, never on how many share a call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"

namespace augur::kernels {

// out[m * n_keys + key] = score of query m against key row `key`.
// q_codes: [n_queries, head_dim], q_scales: [n_queries, head_dim / 32] (quantize_rows_q8_0);
// keys: [n_keys, key_row_bytes] rows of key_type (Q8_0 or Q4_0); out: [n_queries, n_keys].
void attention_scores_q8(gguf::TensorType key_type, const int8_t* q_codes, const float* q_scales,
                         int64_t n_queries, const uint8_t* keys, size_t key_row_bytes,
                         int64_t n_keys, int64_t head_dim, float scale, float* out);

}  // namespace augur::kernels
