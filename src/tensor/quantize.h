// Encoding f32 rows into the weight types augur decodes (for `augur quantize` and for tests).
// Q8_0 and Q4_0 reproduce ggml's reference quantizers bit for bit, which is what llama-quantize
// writes for them without an importance matrix. Q4_K and Q6_K use a simple one-pass min/max scheme
// (not ggml's iterative search): valid files that decode within half a quantization step of the
// input, but not byte-identical to llama-quantize's output.
#pragma once

#include <cstdint>

#include "gguf/types.h"

namespace augur::tensor {

// F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K.
bool has_quantizer(gguf::TensorType type);

// Encodes n floats (n a multiple of the block size) as one row of `type` into dst, which holds
// gguf::row_bytes(type, n) bytes. Throws Unsupported naming the type when has_quantizer is false.
void quantize_row(gguf::TensorType type, const float* src, uint8_t* dst, int64_t n);

}  // namespace augur::tensor
