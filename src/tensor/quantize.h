// Encoding f32 rows into the weight types augur decodes (for `augur quantize` and for tests).
// Every quantized type repeats ggml's reference quantizer (quantize_row_*_ref) operation for
// operation, which is what llama-quantize writes without an importance matrix: Q8_0, Q4_0, Q5_0,
// and the K-quants Q4_K, Q5_K (make_qkx2_quants' search over trial scales) and Q6_K
// (make_qx_quants, rmse_type 1). Q8_0/Q4_0 are checked byte for byte against llama-quantize files;
// the others only against the algorithm (no llama-quantize K-quant file is at hand;
// docs/kernels.md, "Quantizers").
#pragma once

#include <cstdint>

#include "gguf/types.h"

namespace augur::tensor {

// F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K.
bool has_quantizer(gguf::TensorType type);

// Encodes n floats (n a multiple of the block size) as one row of `type` into dst, which holds
// gguf::row_bytes(type, n) bytes. Throws Unsupported naming the type when has_quantizer is false.
void quantize_row(gguf::TensorType type, const float* src, uint8_t* dst, int64_t n);

}  // namespace augur::tensor
