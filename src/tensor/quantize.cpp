#include "tensor/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "tensor/blocks.h"
#include "tensor/matrix.h"

namespace augur::tensor {
namespace {

using gguf::TensorType;

void store_fp16(uint16_t& dst, float value) {
  const uint16_t h = fp32_to_fp16(value);
  std::memcpy(&dst, &h, sizeof h);
}

// The smallest fp16 >= value (value >= 0 and finite), so a scale stored in fp16 never shrinks the
// range it has to cover.
uint16_t fp16_at_least(float value) {
  uint16_t h = fp32_to_fp16(value);
  if (fp16_to_fp32(h) < value) ++h;
  return h;
}

// ggml's quantize_row_q8_0_ref: d = amax / 127, q = round-half-away(x / d).
void quantize_q8_0(const float* x, BlockQ8_0& b) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_fp16(b.d, d);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(std::round(x[i] * id));
}

// ggml's quantize_row_q4_0_ref: the element of largest magnitude maps to nibble 0 (d = max / -8);
// nibbles are truncated after adding 8.5 and capped at 15.
void quantize_q4_0(const float* x, BlockQ4_0& b) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < 32; ++i) {
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_fp16(b.d, d);
  for (int i = 0; i < 16; ++i) {
    const auto lo =
        static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x[i] * id + 8.5f))));
    const auto hi = static_cast<uint8_t>(
        std::min(15, static_cast<int>(static_cast<int8_t>(x[i + 16] * id + 8.5f))));
    b.qs[i] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// Per sub-block of 32: min clamped to <= 0 and max. The mins' and scales' 6-bit codes are rounded
// up, so the decoded range [-dmin*m, -dmin*m + 15*d*sc] always covers the sub-block; each element
// then rounds to the nearest of the 16 levels.
void quantize_q4_k(const float* x, BlockQ4_K& b) {
  float neg_min[8], max[8];
  float dmin = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.0f, hi = -INFINITY;
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[32 * j + l]);
      hi = std::max(hi, x[32 * j + l]);
    }
    neg_min[j] = -lo;
    max[j] = hi;
    dmin = std::max(dmin, neg_min[j] / 63);
  }
  const uint16_t dmin_h = fp16_at_least(dmin);
  const float dmin_f = fp16_to_fp32(dmin_h);
  uint8_t m_code[8], sc_code[8];
  float m1[8], scale[8];
  float d = 0.0f;
  for (int j = 0; j < 8; ++j) {
    m_code[j] = dmin_f > 0
                    ? static_cast<uint8_t>(std::clamp(std::ceil(neg_min[j] / dmin_f), 0.0f, 63.0f))
                    : 0;
    m1[j] = dmin_f * m_code[j];
    scale[j] = std::max(0.0f, (max[j] + m1[j]) / 15);
    d = std::max(d, scale[j] / 63);
  }
  const uint16_t d_h = fp16_at_least(d);
  const float d_f = fp16_to_fp32(d_h);
  std::memcpy(&b.d, &d_h, sizeof d_h);
  std::memcpy(&b.dmin, &dmin_h, sizeof dmin_h);
  for (int j = 0; j < 8; ++j) {
    sc_code[j] =
        d_f > 0 ? static_cast<uint8_t>(std::clamp(std::ceil(scale[j] / d_f), 0.0f, 63.0f)) : 0;
  }
  // Pack: see scale_min_q4_k in tensor/block_decode.h for the inverse.
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = static_cast<uint8_t>((sc_code[j] & 63) | ((sc_code[j + 4] >> 4) << 6));
    b.scales[j + 4] = static_cast<uint8_t>((m_code[j] & 63) | ((m_code[j + 4] >> 4) << 6));
    b.scales[j + 8] = static_cast<uint8_t>((sc_code[j + 4] & 0xF) | ((m_code[j + 4] & 0xF) << 4));
  }
  std::memset(b.qs, 0, sizeof b.qs);
  for (int j = 0; j < 8; ++j) {
    const float d1 = d_f * sc_code[j];
    for (int l = 0; l < 32; ++l) {
      const long q = d1 > 0 ? std::lrint((x[32 * j + l] + m1[j]) / d1) : 0;
      const auto nibble = static_cast<uint8_t>(std::clamp(q, 0L, 15L));
      b.qs[32 * (j / 2) + l] |= static_cast<uint8_t>(nibble << (4 * (j % 2)));
    }
  }
}

// Per sub-block of 16: a positive scale amax/31.5 whose 8-bit code is rounded up, so every element
// maps into [-31.5, 31.5] steps and rounds to one of the 64 levels -32..31 within half a step.
void quantize_q6_k(const float* x, BlockQ6_K& b) {
  float scale[16];
  float d = 0.0f;
  for (int t = 0; t < 16; ++t) {
    float amax = 0.0f;
    for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * t + l]));
    scale[t] = amax / 31.5f;
    d = std::max(d, scale[t] / 127);
  }
  const uint16_t d_h = fp16_at_least(d);
  const float d_f = fp16_to_fp32(d_h);
  std::memcpy(&b.d, &d_h, sizeof d_h);
  std::memset(b.ql, 0, sizeof b.ql);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int t = 0; t < 16; ++t) {
    const float code = d_f > 0 ? std::clamp(std::ceil(scale[t] / d_f), 0.0f, 127.0f) : 0.0f;
    b.scales[t] = static_cast<int8_t>(code);
  }
  for (int e = 0; e < 256; ++e) {
    const float d1 = d_f * static_cast<float>(b.scales[e / 16]);
    const long level = d1 > 0 ? std::lrint(x[e] / d1) : 0;
    const auto q = static_cast<uint8_t>(std::clamp(level, -32L, 31L) + 32);
    const int half = e / 128, k = (e % 128) / 32, l = e % 32;
    b.ql[64 * half + l + 32 * (k & 1)] |= static_cast<uint8_t>((q & 0xF) << (4 * (k >> 1)));
    b.qh[32 * half + l] |= static_cast<uint8_t>((q >> 4) << (2 * k));
  }
}

template <class Block, void (*kEncode)(const float*, Block&)>
void quantize_blocks(const float* src, uint8_t* dst, int64_t n, int64_t block_elems) {
  for (int64_t b = 0; b < n / block_elems; ++b) {
    Block block;
    kEncode(src + b * block_elems, block);
    std::memcpy(dst + b * sizeof(Block), &block, sizeof(Block));
  }
}

}  // namespace

bool has_quantizer(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_K:
    case TensorType::Q6_K: return true;
    default: return false;
  }
}

void quantize_row(TensorType type, const float* src, uint8_t* dst, int64_t n) {
  if (!has_quantizer(type)) {
    throw Unsupported(fmt::format(
        "quantize: type {} has no encoder (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)",
        gguf::type_name(type)));
  }
  AUGUR_CHECK(n >= 0 && n % gguf::traits(type).block_elems == 0,
              "n must be a whole number of blocks");
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case TensorType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_fp16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case TensorType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case TensorType::Q8_0: quantize_blocks<BlockQ8_0, quantize_q8_0>(src, dst, n, 32); return;
    case TensorType::Q4_0: quantize_blocks<BlockQ4_0, quantize_q4_0>(src, dst, n, 32); return;
    case TensorType::Q4_K: quantize_blocks<BlockQ4_K, quantize_q4_k>(src, dst, n, 256); return;
    case TensorType::Q6_K: quantize_blocks<BlockQ6_K, quantize_q6_k>(src, dst, n, 256); return;
    default: break;
  }
  AUGUR_CHECK(false, "has_quantizer and quantize_row list the same types");
}

}  // namespace augur::tensor
