// Weight dtypes: half/bfloat conversions, the Matrix view of a GGUF 2-D weight, and exact decoding
// of one row of any type augur computes with (F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K,
// Q6_K).
// Owns no data: a Matrix points into the gguf::File mapping and must not outlive it.
// Matrix products live in kernels/; block layouts in tensor/blocks.h; encoding in
// tensor/quantize.h.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gguf/file.h"
#include "gguf/types.h"

namespace augur::tensor {

// IEEE binary16 <-> binary32. fp32_to_fp16 rounds to nearest even (as F16C's vcvtps2ph with
// rounding mode 0, which is what ggml uses), keeps subnormals, maps overflow to inf and NaN to a
// quiet NaN of the same sign.
inline float fp16_to_fp32(uint16_t h);
inline uint16_t fp32_to_fp16(float f);
// bfloat16 <-> binary32, as ggml: round to nearest even, subnormals kept, NaN forced quiet.
inline float bf16_to_fp32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// A 2-D weight in GGUF layout: `rows` rows of `cols` contiguous elements (ggml ne = [cols, rows]).
struct Matrix {
  gguf::TensorType type = gguf::TensorType::F32;
  const uint8_t* data = nullptr;  // [rows, row_bytes], owned by the gguf::File
  int64_t rows = 0, cols = 0;
  size_t row_bytes = 0;
  // The same weights in the layout a SIMD kernel reads fastest (kernels/packed_weights.h), made
  // at load for the path in use; null when every path reads `data`. Kernels of other paths, and
  // everything that is not a matrix product, read `data`.
  std::shared_ptr<const uint8_t> packed;
  // Which of kernels/packed_weights.h's layouts `packed` holds (kNone when it is null).
  enum class Layout : uint8_t { kNone, kLanes16, kScaleGroups };
  Layout packed_layout = Layout::kNone;
  const uint8_t* row(int64_t r) const { return data + r * row_bytes; }
  // From a 2-D tensor (a 1-D tensor is a single row); throws FormatError naming the tensor for
  // rank > 2, Unsupported naming the tensor and its type when has_decoder(type) is false.
  static Matrix from(const gguf::TensorInfo& t);
  // Matrix `index` of a 3-D tensor [cols, rows, n]: a mixture-of-experts layer stores its n
  // experts as n consecutive matrices. FormatError names the tensor unless it has 3 dimensions
  // and 0 <= index < n; Unsupported as from().
  static Matrix slice_of(const gguf::TensorInfo& t, int64_t index);
};

// F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K.
bool has_decoder(gguf::TensorType type);

// Exact decoding of n elements (n a multiple of the block size) from the start of a row, with the
// same float operations, in the same order, as ggml's reference dequantize_row_* functions.
// Throws Unsupported naming the type for other types.
void dequantize_row(gguf::TensorType type, const uint8_t* src, float* dst, int64_t n);

// ---- inline definitions ----

inline float fp16_to_fp32(uint16_t h) {
  // Branch-free and exact: shift exponent and mantissa into place and rescale the exponent bias
  // with one multiply (inf/NaN stay inf/NaN); subnormals come from a magic-number subtraction.
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;  // drops the sign
  const float normal = std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float subnormal = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t magnitude =
      two_w < (1u << 27) ? std::bit_cast<uint32_t>(subnormal) : std::bit_cast<uint32_t>(normal);
  return std::bit_cast<float>(sign | magnitude);
}

inline uint16_t fp32_to_fp16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // NaN: quiet, keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {                                              // normal half (>= 2^-14)
    // Rebias the exponent, then round the 13 dropped bits to nearest even; a carry out of the
    // mantissa correctly bumps the exponent.
    const uint32_t rebased = abs - 0x38000000u;
    const uint32_t round = 0xfffu + ((rebased >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rebased + round) >> 13));
  }
  if (abs < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): +-0
  // Subnormal half: value / 2^-24 rounded to nearest even, done on the integer significand.
  const uint32_t exponent = abs >> 23;  // 102..112
  const uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24
  const uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  return static_cast<uint16_t>(sign | rounded);
}

}  // namespace augur::tensor
