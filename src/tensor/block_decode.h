// Portable decoders of 32 consecutive weights of a quantized block, shared by dequantize_row and
// the scalar matmul kernel so both produce bit-identical weights. Each reproduces ggml's reference
// dequantizer's float operations in the same order (e.g. Q4_K is (d*sc)*q - dmin*m, two roundings).
// Baseline-ISA code only: ISA-specific files (*_avx2.cpp) must not include this header, or the
// linker could keep their copy of these inline functions for everyone.
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/blocks.h"
#include "tensor/matrix.h"

namespace augur::tensor {

// The 6-bit scale and min of Q4_K sub-block j (0..7) from the 12 packed bytes: sub-blocks 0..3 keep
// theirs in the low 6 bits of bytes j and j+4; sub-blocks 4..7 split theirs into a low nibble in
// byte j+4 and two high bits in the top bits of bytes j-4 (scale) and j (min).
inline void scale_min_q4_k(int j, const uint8_t* scales, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = scales[j] & 63;
    m = scales[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// a*b - c with two roundings even where the compiler would contract it into an FMA.
inline float mul_then_sub(float a, float b, float c) {
  float product = a * b;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+x"(product));
#elif defined(__GNUC__) && defined(__aarch64__)
  asm("" : "+w"(product));
#endif
  return product - c;
}

inline float load_fp16(const uint16_t& h) {
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return fp16_to_fp32(bits);
}

inline void decode_q8_0(const BlockQ8_0& b, float* out) {  // out: [32]
  const float d = load_fp16(b.d);
  for (int i = 0; i < 32; ++i) out[i] = static_cast<float>(b.qs[i]) * d;
}

inline void decode_q4_0(const BlockQ4_0& b, float* out) {  // out: [32]
  const float d = load_fp16(b.d);
  for (int i = 0; i < 16; ++i) {
    out[i] = static_cast<float>((b.qs[i] & 0x0F) - 8) * d;
    out[i + 16] = static_cast<float>((b.qs[i] >> 4) - 8) * d;
  }
}

// The signed codes of block `index` of a Q8_0 or Q4_0 row (nibble - 8 for Q4_0), and the block's
// scale: what integer dot products read instead of decoded floats.
inline float block_codes_q8_0_q4_0(gguf::TensorType type, const uint8_t* row, int64_t index,
                                   int8_t* codes) {  // codes: [32]
  if (type == gguf::TensorType::Q8_0) {
    const auto& b = reinterpret_cast<const BlockQ8_0*>(row)[index];
    std::memcpy(codes, b.qs, 32);
    return load_fp16(b.d);
  }
  const auto& b = reinterpret_cast<const BlockQ4_0*>(row)[index];
  for (int i = 0; i < 16; ++i) {
    codes[i] = static_cast<int8_t>((b.qs[i] & 0x0F) - 8);
    codes[i + 16] = static_cast<int8_t>((b.qs[i] >> 4) - 8);
  }
  return load_fp16(b.d);
}

// ggml's dequantize_row_q5_0: ((nibble | fifth bit << 4) - 16) * d, one rounding.
inline void decode_q5_0(const BlockQ5_0& b, float* out) {  // out: [32]
  const float d = load_fp16(b.d);
  uint32_t qh;
  std::memcpy(&qh, b.qh, sizeof qh);
  for (int i = 0; i < 16; ++i) {
    const int lo = static_cast<int>((b.qs[i] & 0x0F) | (((qh >> i) & 1u) << 4)) - 16;
    const int hi = static_cast<int>((b.qs[i] >> 4) | (((qh >> (i + 16)) & 1u) << 4)) - 16;
    out[i] = static_cast<float>(lo) * d;
    out[i + 16] = static_cast<float>(hi) * d;
  }
}

// Elements [32*sub, 32*sub + 32) of a Q4_K block, sub < 8.
inline void decode_q4_k(const BlockQ4_K& b, int sub, float* out) {  // out: [32]
  uint8_t sc, m;
  scale_min_q4_k(sub, b.scales, sc, m);
  const float d1 = load_fp16(b.d) * sc;
  const float m1 = load_fp16(b.dmin) * m;
  const uint8_t* q = b.qs + 32 * (sub / 2);
  const int shift = 4 * (sub % 2);
  for (int l = 0; l < 32; ++l) {
    out[l] = mul_then_sub(d1, static_cast<float>((q[l] >> shift) & 0xF), m1);
  }
}

// Elements [32*sub, 32*sub + 32) of a Q5_K block, sub < 8: (d*sc)*q - dmin*m as ggml's
// dequantize_row_q5_K, two roundings.
inline void decode_q5_k(const BlockQ5_K& b, int sub, float* out) {  // out: [32]
  uint8_t sc, m;
  scale_min_q4_k(sub, b.scales, sc, m);
  const float d1 = load_fp16(b.d) * sc;
  const float m1 = load_fp16(b.dmin) * m;
  const uint8_t* q = b.qs + 32 * (sub / 2);
  const int shift = 4 * (sub % 2);
  for (int l = 0; l < 32; ++l) {
    const int code = ((q[l] >> shift) & 0xF) + (((b.qh[l] >> sub) & 1) << 4);
    out[l] = mul_then_sub(d1, static_cast<float>(code), m1);
  }
}

// Elements [32*part, 32*part + 32) of a Q6_K block, part < 8.
inline void decode_q6_k(const BlockQ6_K& b, int part, float* out) {  // out: [32]
  const float d = load_fp16(b.d);
  const int half = part / 4, k = part % 4;
  const uint8_t* ql = b.ql + 64 * half + 32 * (k & 1);
  const uint8_t* qh = b.qh + 32 * half;
  const int8_t* sc = b.scales + 8 * half + 2 * k;
  const int low_shift = 4 * (k >> 1), high_shift = 2 * k;
  for (int l = 0; l < 32; ++l) {
    const int q = (((ql[l] >> low_shift) & 0xF) | (((qh[l] >> high_shift) & 3) << 4)) - 32;
    out[l] = d * static_cast<float>(sc[l / 16]) * static_cast<float>(q);
  }
}

}  // namespace augur::tensor
