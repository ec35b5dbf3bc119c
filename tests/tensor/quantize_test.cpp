// quantize_row: Q8_0 / Q4_0 byte-identical to llama-quantize's output on the tiny-llama fixtures;
// every type decodes back within its format's error (checked element by element against the
// quantization step the block itself stores).
#include "tensor/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "gguf/file.h"
#include "tensor/block_decode.h"
#include "tensor/blocks.h"
#include "tensor/matrix.h"
#include "test_paths.h"

namespace augur::tensor {
namespace {

using gguf::TensorType;

// Quantizes every 2-D tensor of tiny-llama.gguf to `type` and compares the bytes with the file
// llama-quantize --pure made from the same F32 weights.
void expect_same_bytes_as_llama_quantize(TensorType type, const std::string& quant_file) {
  auto f32_file = gguf::File::open(testing::fixtures_dir() / "tiny-llama.gguf");
  auto q_file = gguf::File::open(testing::fixtures_dir() / quant_file);
  int n_matrices = 0;
  for (const auto& t : f32_file->tensors()) {
    if (t.ne.size() != 2) continue;
    const auto w = Matrix::from(t);
    const auto q = Matrix::from(q_file->tensor(t.name));
    ASSERT_EQ(q.type, type) << t.name;
    std::vector<float> row(w.cols);
    std::vector<uint8_t> encoded(q.row_bytes);
    for (int64_t r = 0; r < w.rows; ++r) {
      dequantize_row(w.type, w.row(r), row.data(), w.cols);
      quantize_row(type, row.data(), encoded.data(), w.cols);
      ASSERT_EQ(std::memcmp(encoded.data(), q.row(r), q.row_bytes), 0) << t.name << " row " << r;
    }
    ++n_matrices;
  }
  EXPECT_EQ(n_matrices, 30);  // 7 per layer x 4 + token_embd + output
}

TEST(QuantizeRow, Q8_0MatchesLlamaQuantizeByteForByte) {
  expect_same_bytes_as_llama_quantize(TensorType::Q8_0, "tiny-llama-Q8_0.gguf");
}

TEST(QuantizeRow, Q4_0MatchesLlamaQuantizeByteForByte) {
  expect_same_bytes_as_llama_quantize(TensorType::Q4_0, "tiny-llama-Q4_0.gguf");
}

TEST(QuantizeRow, Bf16MatchesLlamaQuantizeByteForByte) {
  expect_same_bytes_as_llama_quantize(TensorType::BF16, "tiny-llama-BF16.gguf");
}

// Gaussian rows with occasional outliers, a constant run, zeros and an all-positive stretch.
std::vector<float> test_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = normal(rng);
  for (int64_t i = 0; i < n; i += 97) x[i] *= 25.0f;
  for (int64_t i = 0; i < std::min<int64_t>(n, 32); ++i) x[i] = 0.0f;
  for (int64_t i = 32; i < std::min<int64_t>(n, 64); ++i) x[i] = 0.0375f;
  for (int64_t i = 64; i < std::min<int64_t>(n, 96); ++i) x[i] = std::fabs(x[i]) + 0.01f;
  return x;
}

// The largest decoding error each element may have, read from the encoded block's own scales:
// half a step for the K-quants (our quantizer covers each sub-block's range), one step for Q4_0
// (clamping at nibble 15), half a step plus fp16 error of d for Q8_0.
double allowed_error(TensorType type, const uint8_t* row, int64_t e, float x) {
  switch (type) {
    case TensorType::F32: return 0.0;
    case TensorType::F16: return std::fabs(x) * std::ldexp(1.0, -11) + std::ldexp(1.0, -25);
    case TensorType::BF16: return std::fabs(x) * std::ldexp(1.0, -8);
    case TensorType::Q8_0: {
      const auto& b = reinterpret_cast<const BlockQ8_0*>(row)[e / 32];
      return std::fabs(load_fp16(b.d)) * (0.5 + 127.0 / 2048);
    }
    case TensorType::Q4_0: {
      const auto& b = reinterpret_cast<const BlockQ4_0*>(row)[e / 32];
      return std::fabs(load_fp16(b.d)) * (1.0 + 8.0 / 2048);
    }
    case TensorType::Q4_K: {
      const auto& b = reinterpret_cast<const BlockQ4_K*>(row)[e / 256];
      uint8_t sc, m;
      scale_min_q4_k(static_cast<int>(e % 256) / 32, b.scales, sc, m);
      return 0.5 * load_fp16(b.d) * sc * (1 + 1e-6) + 1e-7 * std::fabs(x) + 1e-9;
    }
    case TensorType::Q6_K: {
      const auto& b = reinterpret_cast<const BlockQ6_K*>(row)[e / 256];
      return 0.5 * std::fabs(load_fp16(b.d) * b.scales[(e % 256) / 16]) * (1 + 1e-6) + 1e-9;
    }
    default: return 0.0;
  }
}

struct RoundTrip {
  double worst_ratio = 0;   // max err / allowed (0 when allowed is 0 and err is 0)
  double relative_rms = 0;  // rms(err) / rms(x)
  std::optional<int64_t> first_violation;
};

RoundTrip check_round_trip(TensorType type, const std::vector<float>& x,
                           const std::vector<uint8_t>& encoded) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> back(x.size());
  dequantize_row(type, encoded.data(), back.data(), n);
  RoundTrip result;
  double err2 = 0, x2 = 0;
  for (int64_t e = 0; e < n; ++e) {
    const double err = std::fabs(double(back[e]) - x[e]);
    const double allowed = allowed_error(type, encoded.data(), e, x[e]);
    if (err > allowed && !result.first_violation) result.first_violation = e;
    if (allowed > 0) result.worst_ratio = std::max(result.worst_ratio, err / allowed);
    err2 += err * err;
    x2 += double(x[e]) * x[e];
  }
  result.relative_rms = std::sqrt(err2 / x2);
  return result;
}

class QuantizeRoundTrip : public ::testing::TestWithParam<TensorType> {};

TEST_P(QuantizeRoundTrip, DecodesWithinTheFormatsError) {
  const TensorType type = GetParam();
  // A loose bound on rms(error) / rms(x) on top of the per-element one. The 25x outliers set the
  // step of the blocks they sit in, so 4-bit formats land near 0.15 on this data.
  const double max_rms = type == TensorType::Q4_0 || type == TensorType::Q4_K   ? 0.25
                         : type == TensorType::Q6_K || type == TensorType::Q8_0 ? 0.05
                                                                                : 0.01;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const auto x = test_row(1024, seed);
    std::vector<uint8_t> encoded(gguf::row_bytes(type, 1024));
    quantize_row(type, x.data(), encoded.data(), 1024);
    const auto rt = check_round_trip(type, x, encoded);
    EXPECT_FALSE(rt.first_violation.has_value())
        << gguf::type_name(type) << " seed " << seed << " element " << *rt.first_violation;
    EXPECT_LE(rt.relative_rms, max_rms) << gguf::type_name(type);
  }
}

TEST_P(QuantizeRoundTrip, ZeroRowDecodesToZeros) {
  const TensorType type = GetParam();
  const std::vector<float> x(512, 0.0f);
  std::vector<uint8_t> encoded(gguf::row_bytes(type, 512));
  quantize_row(type, x.data(), encoded.data(), 512);
  std::vector<float> back(512, 1.0f);
  dequantize_row(type, encoded.data(), back.data(), 512);
  for (float v : back) ASSERT_EQ(v, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantizeRoundTrip,
                         ::testing::Values(TensorType::F32, TensorType::F16, TensorType::BF16,
                                           TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K,
                                           TensorType::Q6_K),
                         [](const auto& info) { return std::string(gguf::type_name(info.param)); });

TEST(QuantizeRoundTrip, CheckerCatchesACorruptedBlock) {
  for (auto type : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q4_0}) {
    const auto x = test_row(512, 9);
    std::vector<uint8_t> encoded(gguf::row_bytes(type, 512));
    quantize_row(type, x.data(), encoded.data(), 512);
    ASSERT_FALSE(check_round_trip(type, x, encoded).first_violation.has_value());
    // Flip a high bit in the middle of the second block's quants.
    const size_t block = gguf::traits(type).block_bytes;
    encoded[block + block / 2] ^= 0x80;
    EXPECT_TRUE(check_round_trip(type, x, encoded).first_violation.has_value())
        << gguf::type_name(type);
  }
}

TEST(QuantizeRow, RejectsTypeWithoutEncoderNamingIt) {
  EXPECT_FALSE(has_quantizer(TensorType::Q5_K));
  std::vector<float> x(256);
  std::vector<uint8_t> out(256);
  try {
    quantize_row(TensorType::IQ4_XS, x.data(), out.data(), 256);
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("IQ4_XS"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace augur::tensor
