// Q8_0 activation quantization must be ggml-cpu's x86 quantize_row_q8_0 to the bit: that is what
// lets augur's Q8_0/Q4_0 logits match llama.cpp's quantized references (FIXTURES.md section 7).
#include "kernels/quantize_activations.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
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

// A NaN or infinite activation (a broken model) must not be undefined behaviour: every path
// gives what cvtps2dq + packs give, -128 for the NaN code, and the other codes stay defined.
TEST(QuantizeActivations, NonFiniteActivationsGiveTheSameDefinedCodesOnEveryPath) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i % 11) - 5.0f;
  x[0] = std::numeric_limits<float>::quiet_NaN();  // block 0: a NaN, finite max 5
  x[40] = std::numeric_limits<float>::infinity();  // block 1: amax infinite, so 127 / amax = 0
  std::vector<std::vector<int8_t>> codes;
  for (Isa isa : supported_isas()) {
    set_isa_for_testing(isa);
    codes.emplace_back(x.size());
    std::vector<float> scales(2);
    quantize_rows_q8_0(x.data(), 1, 64, codes.back().data(), scales.data());
    EXPECT_EQ(scales[0], tensor::fp16_to_fp32(tensor::fp32_to_fp16(5.0f / 127.0f)));
    EXPECT_TRUE(std::isinf(scales[1])) << isa_name(isa);
  }
  set_isa_for_testing(select_isa(nullptr));
  for (size_t i = 1; i < codes.size(); ++i)
    EXPECT_EQ(codes[i], codes[0]) << isa_name(supported_isas()[i]);
  EXPECT_EQ(codes[0][0], -128);
  EXPECT_EQ(codes[0][1], -102);   // -4 * 127 / 5 = -101.6
  EXPECT_EQ(codes[0][40], -128);  // inf * 0 is NaN
  EXPECT_EQ(codes[0][41], 0);
}

TEST(QuantizeActivations, Q8_0ForLegacyQuantsQ8_KForKQuantsNoneForFloats) {
  using T = gguf::TensorType;
  for (auto t : {T::Q8_0, T::Q4_0, T::Q5_0}) {
    EXPECT_TRUE(uses_q8_activations(t)) << gguf::type_name(t);
    EXPECT_FALSE(uses_q8_k_activations(t)) << gguf::type_name(t);
  }
  for (auto t : {T::Q4_K, T::Q5_K, T::Q6_K}) {
    EXPECT_FALSE(uses_q8_activations(t)) << gguf::type_name(t);
    EXPECT_TRUE(uses_q8_k_activations(t)) << gguf::type_name(t);
  }
  for (auto t : {T::F32, T::F16, T::BF16}) {
    EXPECT_FALSE(uses_q8_activations(t) || uses_q8_k_activations(t)) << gguf::type_name(t);
  }
}

// ---- Q8_K (K-quant weights) ----

struct QuantizedK {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int16_t> bsums;
};

QuantizedK quantize_k(const std::vector<float>& x) {
  QuantizedK out{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / 256),
                 std::vector<int16_t>(x.size() / 16)};
  quantize_rows_q8_k(x.data(), 1, static_cast<int64_t>(x.size()), out.q.data(), out.d.data(),
                     out.bsums.data());
  return out;
}

// ggml's quantize_row_q8_K_ref written out plainly and independently: the first element of
// largest magnitude sets iscale = -127 / max; codes are iscale * x rounded to nearest, ties to
// even (nearbyint in the default rounding mode), capped at 127; d = 1 / iscale; all-zero blocks
// get d = 0 and zero codes (and, here, zero sums).
QuantizedK straightforward_q8_k(const std::vector<float>& x) {
  QuantizedK out{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / 256),
                 std::vector<int16_t>(x.size() / 16)};
  for (size_t b = 0; b < x.size() / 256; ++b) {
    const float* v = x.data() + 256 * b;
    size_t at = 0;
    for (size_t i = 1; i < 256; ++i) {
      if (std::fabs(v[i]) > std::fabs(v[at])) at = i;
    }
    if (v[at] == 0.0f) continue;  // zeros already
    const float iscale = -127.0f / v[at];
    for (size_t i = 0; i < 256; ++i) {
      const volatile float product = iscale * v[i];  // rounded on its own, as ggml's
      const long code = std::lrint(product);
      out.q[256 * b + i] = static_cast<int8_t>(code > 127 ? 127 : code);
    }
    for (size_t k = 0; k < 16; ++k) {
      int sum = 0;
      for (size_t i = 0; i < 16; ++i) sum += out.q[256 * b + 16 * k + i];
      out.bsums[16 * b + k] = static_cast<int16_t>(sum);
    }
    out.d[b] = 1.0f / iscale;
  }
  return out;
}

void expect_same(const QuantizedK& got, const QuantizedK& want, const std::string& what) {
  EXPECT_EQ(got.q, want.q) << what;
  EXPECT_EQ(got.bsums, want.bsums) << what;
  ASSERT_EQ(got.d.size(), want.d.size());
  for (size_t b = 0; b < got.d.size(); ++b) {
    EXPECT_EQ(std::bit_cast<uint32_t>(got.d[b]), std::bit_cast<uint32_t>(want.d[b]))
        << what << " block " << b;
  }
}

TEST(QuantizeActivationsQ8_K, MatchesAStraightforwardReferenceOnManyRandomRows) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 30);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<float> x(1024);
    const float scale = std::ldexp(1.0f, exponent(rng));
    for (auto& v : x) v = normal(rng) * scale;
    // Outliers in some rows, exact ties (codes at k + 0.5) in others.
    if (trial % 3 == 0) x[static_cast<size_t>(rng() % 1024)] *= 1000.0f;
    if (trial % 5 == 0) {
      for (size_t b = 0; b < 4; ++b) {
        x[256 * b] = -127.0f;  // iscale = 1, so x = k + 0.5 is a tie
        for (size_t i = 1; i < 40; ++i) x[256 * b + i] = static_cast<float>(i % 7) - 2.5f;
      }
    }
    expect_same(quantize_k(x), straightforward_q8_k(x), "trial " + std::to_string(trial));
  }
}

TEST(QuantizeActivationsQ8_K, EdgeCases) {
  // All zeros: d = 0, codes and sums 0.
  std::vector<float> zeros(512, 0.0f);
  zeros[300] = -0.0f;
  const auto z = quantize_k(zeros);
  EXPECT_EQ(z.d, std::vector<float>(2, 0.0f));
  EXPECT_EQ(z.q, std::vector<int8_t>(512, 0));
  EXPECT_EQ(z.bsums, std::vector<int16_t>(32, 0));
  expect_same(z, straightforward_q8_k(zeros), "zeros");

  // One large value: it gets code -127 (iscale is negative for a positive max), the rest round
  // to 0 and d = -max / 127.
  std::vector<float> one(256, 1e-6f);
  one[17] = 1000.0f;
  const auto o = quantize_k(one);
  EXPECT_EQ(o.q[17], -127);
  EXPECT_EQ(o.q[0], 0);
  EXPECT_EQ(o.d[0], 1.0f / (-127.0f / 1000.0f));
  EXPECT_LT(o.d[0], 0.0f);
  EXPECT_EQ(o.bsums[1], -127);
  expect_same(o, straightforward_q8_k(one), "one large value");

  // Negative max: iscale = -127 / max > 0, d > 0, codes keep their signs (the max gets -127); an
  // opposite value of the same magnitude after it does not take over (first maximum wins).
  std::vector<float> neg(256, 0.25f);
  neg[3] = -8.0f;
  neg[200] = 8.0f;
  const auto n = quantize_k(neg);
  EXPECT_EQ(n.q[3], -127);
  EXPECT_EQ(n.q[200], 127);
  EXPECT_GT(n.d[0], 0.0f);
  EXPECT_EQ(n.q[0], 4);  // 0.25 * 127 / 8 = 3.97
  expect_same(n, straightforward_q8_k(neg), "negative max");

  // Ties round to even: max -127 makes iscale exactly 1.
  std::vector<float> ties(256, 0.0f);
  ties[0] = -127.0f;
  ties[1] = 2.5f;
  ties[2] = -3.5f;
  ties[3] = 0.5f;
  const auto t = quantize_k(ties);
  EXPECT_EQ(t.q[0], -127);
  EXPECT_EQ(t.q[1], 2);
  EXPECT_EQ(t.q[2], -4);
  EXPECT_EQ(t.q[3], 0);
  EXPECT_EQ(t.d[0], 1.0f);
  EXPECT_EQ(t.bsums[0], -127 + 2 - 4);
}

// A planted defect in the comparison: a reference rounding half away from zero (roundf) differs on
// the tie rows, so the random test above would notice a quantizer that did the same.
TEST(QuantizeActivationsQ8_K, StraightforwardReferenceNoticesWrongTieRounding) {
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;
  x[1] = 2.5f;
  auto wrong = straightforward_q8_k(x);
  wrong.q[1] = static_cast<int8_t>(std::round(2.5f));
  EXPECT_NE(quantize_k(x).q, wrong.q);
}

}  // namespace
}  // namespace augur::kernels
