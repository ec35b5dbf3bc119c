// quantize_row: Q8_0 / Q4_0 byte-identical to llama-quantize's output on the tiny-llama fixtures;
// every type decodes back within its format's error (checked element by element against the
// quantization step the block itself stores); Q5_0 and the K-quants give the bytes worked out by
// hand from ggml's reference algorithms on small inputs (no llama-quantize file of those types is
// at hand to compare with).
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

// Code of element e (within its super-block) of a Q4_K / Q5_K / Q6_K block, read from the bytes;
// Q6_K codes are returned as stored (0..63).
int k_code(TensorType type, const uint8_t* block, int e) {
  if (type == TensorType::Q6_K) {
    const auto& b = *reinterpret_cast<const BlockQ6_K*>(block);
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    return ((b.ql[64 * h + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0xF) |
           (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4);
  }
  const int j = e / 32, l = e % 32;
  if (type == TensorType::Q4_K) {
    const auto& b = *reinterpret_cast<const BlockQ4_K*>(block);
    return (b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF;
  }
  const auto& b = *reinterpret_cast<const BlockQ5_K*>(block);
  return ((b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF) | (((b.qh[l] >> j) & 1) << 4);
}

// The largest decoding error each element may have, read from the encoded block's own scales:
// half a step plus fp16 error of d for Q8_0; one step for Q4_0/Q5_0 (clamping at the top code).
// ggml's K-quant quantizers end by taking, for every element, the nearest level of the stored
// scales clamped to the code range: half a step unless the code sits at an end of the range (then
// x must lie beyond that level's half step: the element was clamped, by any amount; clamping is
// how the least-squares scale search trades an outlier's error for everyone else's).
double allowed_error(TensorType type, const uint8_t* row, int64_t e, float x, float decoded) {
  const double eps = 1e-6 * std::fabs(double(x)) + 1e-9;
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
    case TensorType::Q5_0: {
      const auto& b = reinterpret_cast<const BlockQ5_0*>(row)[e / 32];
      return std::fabs(load_fp16(b.d)) * (1.0 + 16.0 / 2048);
    }
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: {
      const size_t bytes = gguf::traits(type).block_bytes;
      const uint8_t* block = row + bytes * static_cast<size_t>(e / 256);
      const int in_block = static_cast<int>(e % 256);
      double step = 0;
      int top = 0, bottom = 0;
      if (type == TensorType::Q6_K) {
        const auto& b = *reinterpret_cast<const BlockQ6_K*>(block);
        step = double(load_fp16(b.d)) * b.scales[in_block / 16];  // may be negative
        top = 63;
      } else {
        uint8_t sc, m;
        scale_min_q4_k(in_block / 32, block + 4, sc, m);
        step = double(load_fp16(*reinterpret_cast<const uint16_t*>(block))) * sc;
        top = type == TensorType::Q4_K ? 15 : 31;
      }
      const int code = k_code(type, block, in_block);
      const double half = 0.5 * std::fabs(step) + eps;
      if (code != top && code != bottom) return half;
      // At an end: beyond the level's half step on the outside (which side depends on the sign of
      // the step), otherwise within it.
      const double outside = (code == top) == (step >= 0) ? x - decoded : decoded - x;
      return outside >= -half ? std::fabs(double(x) - decoded) : half;
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
    const double allowed = allowed_error(type, encoded.data(), e, x[e], back[e]);
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
  // A bound on rms(error) / rms(x) on top of the per-element one. The 25x outliers set the step
  // of the blocks they sit in, so 4-bit formats land near 0.1-0.15 on this data. Measured: Q4_0
  // 0.13-0.16, Q4_K 0.095-0.098, Q5_0 0.084-0.091, Q5_K 0.048-0.052, Q6_K 0.030-0.035, Q8_0
  // 0.011-0.013.
  const double max_rms = type == TensorType::Q4_0                               ? 0.2
                         : type == TensorType::Q4_K                             ? 0.12
                         : type == TensorType::Q5_0                             ? 0.11
                         : type == TensorType::Q5_K                             ? 0.06
                         : type == TensorType::Q6_K || type == TensorType::Q8_0 ? 0.045
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
                                           TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_0,
                                           TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K),
                         [](const auto& info) { return std::string(gguf::type_name(info.param)); });

TEST(QuantizeRoundTrip, CheckerCatchesACorruptedBlock) {
  for (auto type :
       {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q4_0, TensorType::Q5_0}) {
    const auto x = test_row(512, 9);
    std::vector<uint8_t> encoded(gguf::row_bytes(type, 512));
    quantize_row(type, x.data(), encoded.data(), 512);
    ASSERT_FALSE(check_round_trip(type, x, encoded).first_violation.has_value());
    // Flip a bit in the middle of the second block's quants (Q5_K: in the low nibbles; a flipped
    // code may still be clamped when it lands on an end, so flip a bit the nibble's 4).
    const size_t block = gguf::traits(type).block_bytes;
    const size_t at = type == TensorType::Q5_K ? block + 48 + 64 : block + block / 2;
    encoded[at] ^= type == TensorType::Q5_K ? 0x04 : 0x80;
    EXPECT_TRUE(check_round_trip(type, x, encoded).first_violation.has_value())
        << gguf::type_name(type);
  }
}

// ---- small cases worked out by hand from ggml's reference quantizers ----

template <class Block>
Block encode_one(TensorType type, const std::vector<float>& x) {
  Block b;
  std::vector<uint8_t> bytes(gguf::row_bytes(type, static_cast<int64_t>(x.size())));
  EXPECT_EQ(bytes.size(), sizeof(Block));
  quantize_row(type, x.data(), bytes.data(), static_cast<int64_t>(x.size()));
  std::memcpy(&b, bytes.data(), sizeof b);
  return b;
}

// Q5_0 on x[i] = i - 16: the first element of largest magnitude is -16, so d = -16 / -16 = 1 and
// id = 1; codes trunc(x + 16.5) = i; fifth bits set for i >= 16; decoding gives x back exactly.
TEST(QuantizeByHand, Q5_0Ramp) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16);
  const auto b = encode_one<BlockQ5_0>(TensorType::Q5_0, x);
  EXPECT_EQ(b.d, 0x3C00);  // 1.0
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  EXPECT_EQ(qh, 0xFFFF0000u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b.qs[i], (i & 0xF) | ((i & 0xF) << 4)) << i;
}

// Q4_K with every sub-block x[l] = l % 16: make_qkx2_quants' first fit (min 0, max 15, iscale 1)
// is exact (error 0), so no trial replaces it: scale 1, min -0 (mins stay 0). Coded against
// max_scale 1: every scale code round(63 * 1) = 63, d = fp16(1/63) = 0x2410 (0.015869140625),
// dmin = fp16(0) = 0; codes recomputed as round(x / (d * 63)) = round(x * 1.000244...) = x.
TEST(QuantizeByHand, Q4_KExactSubBlocks) {
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e) x[e] = static_cast<float>(e % 16);
  const auto b = encode_one<BlockQ4_K>(TensorType::Q4_K, x);
  EXPECT_EQ(b.d, 0x2410);
  EXPECT_EQ(b.dmin, 0x0000);
  // Scale 63 = 0b111111, min 0: bytes 0..3 = 63 | (63 >> 4) << 6 = 0xFF, bytes 4..7 = 0,
  // bytes 8..11 = (63 & 0xF) | (0 << 4) = 0x0F.
  const uint8_t scales[12] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0x0F, 0x0F, 0x0F, 0x0F};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(b.scales[i], scales[i]) << i;
  for (int i = 0; i < 128; ++i) EXPECT_EQ(b.qs[i], (i % 16) | ((i % 16) << 4)) << i;
}

// Q5_K with every sub-block x[l] = l (0..31): the same reasoning with nmax 31; codes >= 16 set
// the sub-block's bit in qh (bit j of qh[l] for sub-block j), so qh[l] = 0xFF for l >= 16.
TEST(QuantizeByHand, Q5_KExactSubBlocks) {
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e) x[e] = static_cast<float>(e % 32);
  const auto b = encode_one<BlockQ5_K>(TensorType::Q5_K, x);
  EXPECT_EQ(b.d, 0x2410);  // fp16(1/63); d * 63 = 0.99976, round(31 / 0.99976) = 31
  EXPECT_EQ(b.dmin, 0x0000);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b.scales[i], 0xFF);
  for (int l = 0; l < 32; ++l) EXPECT_EQ(b.qh[l], l >= 16 ? 0xFF : 0x00) << l;
  for (int i = 0; i < 128; ++i) EXPECT_EQ(b.qs[i], (i % 16) | ((i % 16) << 4)) << i;
}

// Q6_K with every sub-block of 16 x[i] = i - 8: make_qx_quants puts the first largest magnitude,
// -8, at code -32 (iscale 4), so l = 4x exactly; with weights x^2 the least-squares scale is
// sum(w x l) / sum(w l^2) = 1/4, and by Cauchy-Schwarz no trial scale fits strictly better.
// Scales coded against max_scale 1/4: iscale = -128 / (1/4) = -512, d = fp16(-1/512) = 0x9800,
// scale codes min(127, round(-512 / 4)) = -128, so d * sc = 1/4 and codes round(4x) + 32 = 4i.
TEST(QuantizeByHand, Q6_KProportionalSubBlocks) {
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e) x[e] = static_cast<float>(e % 16 - 8);
  const auto b = encode_one<BlockQ6_K>(TensorType::Q6_K, x);
  EXPECT_EQ(b.d, 0x9800);
  for (int t = 0; t < 16; ++t) EXPECT_EQ(b.scales[t], -128) << t;
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const int low = (b.ql[64 * h + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0xF;
    const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
    ASSERT_EQ(low | (high << 4), 4 * (e % 16)) << e;
  }
  std::vector<float> back(256);
  dequantize_row(TensorType::Q6_K, reinterpret_cast<const uint8_t*>(&b), back.data(), 256);
  EXPECT_EQ(back, x);
}

TEST(QuantizeRow, RejectsTypeWithoutEncoderNamingIt) {
  EXPECT_FALSE(has_quantizer(TensorType::Q5_1));
  EXPECT_FALSE(has_quantizer(TensorType::Q3_K));
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
