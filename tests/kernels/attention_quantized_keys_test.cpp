// attention_scores_q8 against a scalar re-implementation of ggml's reference vec_dot_q8_0_q8_0 /
// vec_dot_q4_0_q8_0 written here from the block layouts (bytes read directly, not through
// augur's decoders), bit for bit; and its results do not depend on how many queries share a call.
#include "kernels/attention_quantized_keys.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gguf/types.h"
#include "kernels/quantize_activations.h"
#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace augur {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return tensor::fp16_to_fp32(h);
}

// Block b of a key row: Q8_0 = fp16 d + 32 int8; Q4_0 = fp16 d + 16 bytes, low nibbles are
// elements 0..15 and high nibbles 16..31, each minus 8.
float reference_dot(gguf::TensorType type, const uint8_t* key, const int8_t* q, const float* dq,
                    int64_t head_dim) {
  const size_t block_bytes = type == gguf::TensorType::Q8_0 ? 34 : 18;
  float sumf = 0.0f;
  for (int64_t b = 0; b < head_dim / 32; ++b) {
    const uint8_t* block = key + b * block_bytes;
    int sumi = 0;
    for (int j = 0; j < 32; ++j) {
      int code;
      if (type == gguf::TensorType::Q8_0) {
        code = static_cast<int8_t>(block[2 + j]);
      } else {
        const uint8_t byte = block[2 + j % 16];
        code = (j < 16 ? byte & 0x0F : byte >> 4) - 8;
      }
      sumi += code * q[b * 32 + j];
    }
    // ggml: sumf += sumi * (d_x * d_y), contracted to one fma as compilers do for x86.
    sumf = std::fmaf(static_cast<float>(sumi), half_at(block) * dq[b], sumf);
  }
  return sumf;
}

TEST(AttentionQuantizedKeys, EqualsTheReferenceDotBitForBit) {
  constexpr int64_t kHeadDim = 128, kKeys = 37, kQueries = 5;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> q(kQueries * kHeadDim), k(kKeys * kHeadDim);
  for (auto& x : q) x = normal(rng);
  for (auto& x : k) x = normal(rng);
  std::vector<int8_t> codes(q.size());
  std::vector<float> dq(q.size() / 32);
  kernels::quantize_rows_q8_0(q.data(), kQueries, kHeadDim, codes.data(), dq.data());
  for (const auto type : {gguf::TensorType::Q8_0, gguf::TensorType::Q4_0}) {
    const size_t row_bytes = gguf::row_bytes(type, kHeadDim);
    std::vector<uint8_t> keys(kKeys * row_bytes);
    for (int64_t r = 0; r < kKeys; ++r) {
      tensor::quantize_row(type, k.data() + r * kHeadDim, keys.data() + r * row_bytes, kHeadDim);
    }
    std::vector<float> together(kQueries * kKeys);
    kernels::attention_scores_q8(type, codes.data(), dq.data(), kQueries, keys.data(), row_bytes,
                                 kKeys, kHeadDim, scale, together.data());
    for (int64_t m = 0; m < kQueries; ++m) {
      std::vector<float> alone(kKeys);
      kernels::attention_scores_q8(type, codes.data() + m * kHeadDim, dq.data() + m * kHeadDim / 32,
                                   1, keys.data(), row_bytes, kKeys, kHeadDim, scale, alone.data());
      for (int64_t r = 0; r < kKeys; ++r) {
        const float want =
            reference_dot(type, keys.data() + r * row_bytes, codes.data() + m * kHeadDim,
                          dq.data() + m * kHeadDim / 32, kHeadDim) *
            scale;
        const float got = together[m * kKeys + r];
        EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << gguf::type_name(type) << " query " << m
                                                  << " key " << r << ": " << got << " vs " << want;
        EXPECT_EQ(std::memcmp(&alone[r], &got, 4), 0) << "query " << m << " alone, key " << r;
      }
    }
  }
}

// The quantized dot is not the float dot: a kernel that dequantized and summed in float would
// differ from the reference in last bits on some keys (this guards the test above from passing
// for an implementation that never rounds q).
TEST(AttentionQuantizedKeys, DiffersFromTheFloatDotOfDecodedRows) {
  constexpr int64_t kHeadDim = 64, kKeys = 64;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(kHeadDim), k(kKeys * kHeadDim);
  for (auto& x : q) x = normal(rng);
  for (auto& x : k) x = normal(rng);
  std::vector<int8_t> codes(kHeadDim);
  std::vector<float> dq(kHeadDim / 32);
  kernels::quantize_rows_q8_0(q.data(), 1, kHeadDim, codes.data(), dq.data());
  const size_t row_bytes = gguf::row_bytes(gguf::TensorType::Q8_0, kHeadDim);
  std::vector<uint8_t> keys(kKeys * row_bytes);
  std::vector<float> decoded(kHeadDim);
  int differing = 0;
  std::vector<float> scores(kKeys);
  for (int64_t r = 0; r < kKeys; ++r) {
    tensor::quantize_row(gguf::TensorType::Q8_0, k.data() + r * kHeadDim,
                         keys.data() + r * row_bytes, kHeadDim);
  }
  kernels::attention_scores_q8(gguf::TensorType::Q8_0, codes.data(), dq.data(), 1, keys.data(),
                               row_bytes, kKeys, kHeadDim, 1.0f, scores.data());
  for (int64_t r = 0; r < kKeys; ++r) {
    tensor::dequantize_row(gguf::TensorType::Q8_0, keys.data() + r * row_bytes, decoded.data(),
                           kHeadDim);
    float dot = 0.0f;
    for (int64_t d = 0; d < kHeadDim; ++d) dot += q[d] * decoded[d];
    differing += dot != scores[r];
    EXPECT_NEAR(dot, scores[r], 0.05f * (1.0f + std::fabs(dot))) << "key " << r;
  }
  EXPECT_GT(differing, kKeys / 2);
}

}  // namespace
}  // namespace augur
