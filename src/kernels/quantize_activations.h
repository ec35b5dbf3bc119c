// Activation rows in Q8_0 blocks, for the integer dot products of Q8_0 and Q4_0 weights.
// llama.cpp computes those products on Q8_0-quantized activations (ggml-cpu's x86
// quantize_row_q8_0), so doing the same, bit for bit, makes augur's logits match its quantized
// references to rounding noise instead of only its F32-upcast ones (FIXTURES.md section 7), and
// the integer products are cheaper than decoding weights to floats.
#pragma once

#include <cstdint>
#include <functional>

#include "gguf/types.h"

namespace augur::kernels {

// Whether matmul with weights of `type` runs on Q8_0 activations (Q8_0, Q4_0 and Q5_0 weights).
bool uses_q8_activations(gguf::TensorType type);

// Whether matmul with weights of `type` runs on Q8_K activations (Q4_K, Q5_K and Q6_K weights),
// as llama.cpp's vec_dot_q{4,5,6}_K_q8_K do.
bool uses_q8_k_activations(gguf::TensorType type);

// Quantizes `rows` rows of `cols` floats (cols a multiple of 32) into int8 codes qs[rows * cols]
// and per-block scales d[rows * cols / 32], exactly as ggml-cpu's x86 quantize_row_q8_0:
// amax = max |x| over the block; the stored scale is fp16(amax / 127) (returned here as the
// float it decodes to); codes are x * (127 / amax) rounded to nearest even (0 when amax is 0).
void quantize_rows_q8_0(const float* x, int64_t rows, int64_t cols, int8_t* qs, float* d);

// Quantizes `rows` rows of `cols` floats (cols a multiple of 256) into Q8_K super-blocks, exactly
// as ggml's quantize_row_q8_K_ref (which ggml-cpu's x86 quantize_row_q8_K calls; there is no SIMD
// version on x86): `max` is the first element of largest magnitude; when it is 0 the block is all
// zero codes with d = 0 (and bsums 0, which ggml leaves unwritten but never reads with d = 0);
// otherwise iscale = -127 / max, codes min(127, round-half-even(iscale * x)) (ggml's nearest_int:
// add 1.5 * 2^23 and take the mantissa bits), d = 1 / iscale (a float, negative when max > 0), and
// bsums[k] the int16 sum of codes 16k..16k+15.
// Outputs: qs[rows * cols], d[rows * cols / 256], bsums[rows * cols / 16].
void quantize_rows_q8_k(const float* x, int64_t rows, int64_t cols, int8_t* qs, float* d,
                        int16_t* bsums);

// One matmul's activations as quantized for its integer products.
struct QuantizedActivations {
  const float* x;  // [rows, cols] the floats
  int64_t rows, cols;
  int8_t* codes;  // [rows, cols]      writable: an observer may change a rounding
  float* scales;  // [rows, cols / 32] writable, likewise
};
using ActivationObserver = std::function<void(const QuantizedActivations&)>;

// Tests only: matmul calls `observer` on the calling thread after it quantizes each activation
// matrix, before the products read the codes. tests/support/near_tie.h uses it to show that a
// row departing from llama.cpp is one activation rounding that sat at a near-tie. An empty
// observer (the default) turns it off. Not for concurrent use with running kernels.
void set_activation_observer_for_testing(ActivationObserver observer);

namespace detail {
// The observer set for testing, or null.
const ActivationObserver* activation_observer();
}  // namespace detail

}  // namespace augur::kernels
