// Q8_0 activation quantization must be ggml-cpu's x86 quantize_row_q8_0 to the bit: that is what
// lets augur's Q8_0/Q4_0 logits match llama.cpp's quantized references (FIXTURES.md section 7).
#include "kernels/quantize_activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/isa.h"
#include "tensor/matrix.h"

namespace augur::kernels {
namespace {

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d;
};

Quantized quantize(const std::vector<float>& x) {
  Quantized out{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / 32)};
  quantize_rows_q8_0(x.data(), 1, static_cast<int64_t>(x.size()), out.q.data(), out.d.data());
  return out;
}

TEST(QuantizeActivations, RoundsHalfwayCodesToEven) {
  // amax 127 makes the multiplier exactly 1, so x * 127 / amax = x.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = 3.5f;
  x[3] = -2.5f;
  x[4] = -0.5f;
  x[5] = 0.5f;
  x[6] = 1.5f;
  const auto out = quantize(x);
  EXPECT_EQ(out.q[0], 127);
  EXPECT_EQ(out.q[1], 2);
  EXPECT_EQ(out.q[2], 4);
  EXPECT_EQ(out.q[3], -2);
  EXPECT_EQ(out.q[4], 0);
  EXPECT_EQ(out.q[5], 0);
  EXPECT_EQ(out.q[6], 2);
  EXPECT_EQ(out.d[0], 1.0f);
}

TEST(QuantizeActivations, ScaleIsStoredAsHalfButCodesUse127OverAmax) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i)
    x[i] = std::sin(0.37f * static_cast<float>(i)) * (i < 32 ? 3 : 0.01f);
  const auto out = quantize(x);
  for (int b = 0; b < 2; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[32 * b + i]));
    EXPECT_EQ(out.d[b], tensor::fp16_to_fp32(tensor::fp32_to_fp16(amax / 127.0f)));
    EXPECT_NE(out.d[b], amax / 127.0f) << "this block's scale should not be a half exactly";
    const float id = 127.0f / amax;
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(out.q[32 * b + i], static_cast<int8_t>(std::nearbyint(x[32 * b + i] * id)));
      EXPECT_LE(std::abs(int{out.q[32 * b + i]}), 127);
    }
  }
}

TEST(QuantizeActivations, AllZeroBlockHasZeroScaleAndCodes) {
  std::vector<float> x(32, 0.0f);
  x[3] = -0.0f;
  const auto out = quantize(x);
  EXPECT_EQ(out.d[0], 0.0f);
  for (int8_t q : out.q) EXPECT_EQ(q, 0);
}

// Every kernel path gives the same bytes, on random rows and on rows full of halfway codes.
TEST(QuantizeActivations, EveryPathGivesTheSameCodesAndScales) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(64 * 32);
  for (auto& v : x) v = normal(rng);
  for (int b = 0; b < 8; ++b) {  // blocks with amax 127, so codes are the values: exact halves
    x[32 * b] = 127.0f;
    for (int i = 1; i < 32; ++i) x[32 * b + i] = static_cast<float>(i % 7) - 3.5f;
  }
  std::vector<std::vector<int8_t>> codes;
  std::vector<std::vector<float>> scales;
  for (Isa isa : supported_isas()) {
    set_isa_for_testing(isa);
    codes.emplace_back(x.size());
    scales.emplace_back(x.size() / 32);
    quantize_rows_q8_0(x.data(), 4, 16 * 32, codes.back().data(), scales.back().data());
  }
  set_isa_for_testing(select_isa(nullptr));
  for (size_t i = 1; i < codes.size(); ++i) {
    EXPECT_EQ(codes[i], codes[0]) << isa_name(supported_isas()[i]);
    EXPECT_EQ(scales[i], scales[0]) << isa_name(supported_isas()[i]);
  }
  EXPECT_EQ(codes[0][1], -2);  // -2.5 rounds to even
  EXPECT_EQ(codes[0][2], -2);  // -1.5 too
  EXPECT_EQ(codes[0][4], 0);   // 0.5
  EXPECT_EQ(codes[0][6], 2);   // 2.5
}

TEST(QuantizeActivations, OnlyQ8_0AndQ4_0WeightsUseThem) {
  EXPECT_TRUE(uses_q8_activations(gguf::TensorType::Q8_0));
  EXPECT_TRUE(uses_q8_activations(gguf::TensorType::Q4_0));
  for (auto t : {gguf::TensorType::F32, gguf::TensorType::F16, gguf::TensorType::BF16,
                 gguf::TensorType::Q4_K, gguf::TensorType::Q6_K}) {
    EXPECT_FALSE(uses_q8_activations(t)) << gguf::type_name(t);
  }
}

}  // namespace
}  // namespace augur::kernels
