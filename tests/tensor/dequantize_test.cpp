// dequantize_row on hand-built blocks whose expected values follow from the block formats
// (tensor/blocks.h). Scales are powers of two so every expected value is exact in f32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "tensor/blocks.h"
#include "tensor/matrix.h"

namespace augur::tensor {
namespace {

using gguf::TensorType;

template <class Block>
std::vector<uint8_t> as_bytes(const std::vector<Block>& blocks) {
  std::vector<uint8_t> bytes(blocks.size() * sizeof(Block));
  std::memcpy(bytes.data(), blocks.data(), bytes.size());
  return bytes;
}

std::vector<float> decode(TensorType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), -12345.0f);
  dequantize_row(type, bytes.data(), out.data(), n);
  return out;
}

TEST(DequantizeRow, F32IsCopied) {
  const std::vector<float> values = {1.5f, -0.0f, 3e-38f, -7.25f, 1e30f};
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  EXPECT_EQ(decode(TensorType::F32, bytes, 5), values);
}

TEST(DequantizeRow, F16AndBf16WidenEachElement) {
  const std::vector<uint16_t> half = {0x3C00, 0xC000, 0x0001, 0x7BFF, 0x3555};
  const std::vector<uint16_t> bf = {0x3F80, 0xC000, 0x0001, 0x7F7F, 0x3EAB};
  std::vector<uint8_t> half_bytes(10), bf_bytes(10);
  std::memcpy(half_bytes.data(), half.data(), 10);
  std::memcpy(bf_bytes.data(), bf.data(), 10);
  const auto h = decode(TensorType::F16, half_bytes, 5);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[3], 65504.0f);
  EXPECT_EQ(h[4], 1365.0f / 4096.0f);  // 0x3555: 2^-2 * (1 + 0x155/1024)
  const auto b = decode(TensorType::BF16, bf_bytes, 5);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -2.0f);
  EXPECT_EQ(b[2], std::ldexp(1.0f, -133));
  EXPECT_EQ(b[3], std::ldexp(255.0f, 120));  // 0x7F7F: 2^127 * (1 + 127/128)
  EXPECT_EQ(b[4], 171.0f / 512.0f);          // 0x3EAB: 2^-2 * (1 + 43/128)
}

TEST(DequantizeRow, Q8_0ScalesEachInt8ByItsBlockScale) {
  std::vector<BlockQ8_0> blocks(2);
  blocks[0].d = 0x3800;  // 0.5
  blocks[1].d = 0xB400;  // -0.25
  for (int i = 0; i < 32; ++i) {
    blocks[0].qs[i] = static_cast<int8_t>(i * 8 - 128);  // -128..120
    blocks[1].qs[i] = static_cast<int8_t>(127 - i);
  }
  const auto out = decode(TensorType::Q8_0, as_bytes(blocks), 64);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(out[i], 0.5f * static_cast<float>(i * 8 - 128)) << i;
    EXPECT_EQ(out[32 + i], -0.25f * static_cast<float>(127 - i)) << i;
  }
}

TEST(DequantizeRow, Q4_0TakesLowNibblesFirstThenHighNibbles) {
  std::vector<BlockQ4_0> blocks(2);
  blocks[0].d = 0x3400;  // 0.25
  blocks[1].d = 0x4000;  // 2
  for (int i = 0; i < 16; ++i) {
    blocks[0].qs[i] = static_cast<uint8_t>(i | ((15 - i) << 4));
    blocks[1].qs[i] = static_cast<uint8_t>(((i * 5) % 16) | (((i * 3) % 16) << 4));
  }
  const auto out = decode(TensorType::Q4_0, as_bytes(blocks), 64);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], 0.25f * static_cast<float>(i - 8)) << i;
    EXPECT_EQ(out[16 + i], 0.25f * static_cast<float>(7 - i)) << i;
    EXPECT_EQ(out[32 + i], 2.0f * static_cast<float>((i * 5) % 16 - 8)) << i;
    EXPECT_EQ(out[48 + i], 2.0f * static_cast<float>((i * 3) % 16 - 8)) << i;
  }
}

// Packs 6-bit scales and mins as the Q4_K format describes: sub-blocks 0..3 in the low 6 bits of
// bytes j (scale) and j+4 (min); sub-blocks 4..7 as a low nibble in byte j+4 (scale low, min high)
// plus their top two bits in bits 6..7 of byte j-4 (scale) and byte j (min).
void pack_q4_k_scales(const int (&sc)[8], const int (&m)[8], uint8_t* scales) {
  std::memset(scales, 0, 12);
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

TEST(DequantizeRow, Q4_KAppliesSixBitScalesAndMinsPerSubBlock) {
  const int sc[2][8] = {{1, 17, 63, 32, 5, 48, 33, 60}, {63, 0, 2, 16, 31, 47, 15, 62}};
  const int m[2][8] = {{0, 63, 7, 40, 21, 16, 55, 9}, {1, 2, 3, 4, 61, 62, 63, 32}};
  const uint16_t d_bits[2] = {0x3000, 0x3800};     // 1/8, 1/2
  const uint16_t dmin_bits[2] = {0x2C00, 0x3C00};  // 1/16, 1
  const float d[2] = {0.125f, 0.5f}, dmin[2] = {0.0625f, 1.0f};
  std::vector<BlockQ4_K> blocks(2);
  auto nibble = [](int b, int e) { return (e * 5 + b * 3 + e / 32) % 16; };
  for (int b = 0; b < 2; ++b) {
    blocks[b].d = d_bits[b];
    blocks[b].dmin = dmin_bits[b];
    pack_q4_k_scales(sc[b], m[b], blocks[b].scales);
    std::memset(blocks[b].qs, 0, 128);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32, l = e % 32;  // sub-block j: nibbles of qs[32*(j/2) + l], low if j even
      blocks[b].qs[32 * (j / 2) + l] |= static_cast<uint8_t>(nibble(b, e) << (4 * (j % 2)));
    }
  }
  const auto out = decode(TensorType::Q4_K, as_bytes(blocks), 512);
  for (int b = 0; b < 2; ++b) {
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32;
      const double expected = double(d[b]) * sc[b][j] * nibble(b, e) - double(dmin[b]) * m[b][j];
      ASSERT_EQ(out[256 * b + e], expected) << "block " << b << " element " << e;
    }
  }
}

TEST(DequantizeRow, Q5_0AddsTheFifthBitFromQhAndSubtracts16) {
  std::vector<BlockQ5_0> blocks(2);
  blocks[0].d = 0x3400;                                                // 0.25
  blocks[1].d = 0xC000;                                                // -2
  auto code = [](int b, int e) { return (e * 7 + b * 13 + 5) % 32; };  // 5-bit q
  for (int b = 0; b < 2; ++b) {
    uint32_t qh = 0;
    for (int i = 0; i < 16; ++i) {
      const int lo = code(b, i), hi = code(b, i + 16);
      blocks[b].qs[i] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << i;  // element e's fifth bit is bit e
      qh |= static_cast<uint32_t>(hi >> 4) << (i + 16);
    }
    std::memcpy(blocks[b].qh, &qh, 4);
  }
  const auto out = decode(TensorType::Q5_0, as_bytes(blocks), 64);
  const float d[2] = {0.25f, -2.0f};
  for (int b = 0; b < 2; ++b) {
    for (int e = 0; e < 32; ++e) {
      ASSERT_EQ(out[32 * b + e], d[b] * static_cast<float>(code(b, e) - 16)) << b << ", " << e;
    }
  }
}

TEST(DequantizeRow, Q5_KAddsTheFifthBitToQ4_KsNibbles) {
  const int sc[8] = {1, 17, 63, 32, 5, 48, 33, 60}, m[8] = {0, 63, 7, 40, 21, 16, 55, 9};
  BlockQ5_K block;
  block.d = 0x3000;     // 1/8
  block.dmin = 0x2C00;  // 1/16
  pack_q4_k_scales(sc, m, block.scales);
  std::memset(block.qs, 0, sizeof block.qs);
  std::memset(block.qh, 0, sizeof block.qh);
  auto code = [](int e) { return (e * 11 + e / 32 + 3) % 32; };
  for (int e = 0; e < 256; ++e) {
    // Sub-block j: low 4 bits in the nibble of qs[32 * (j / 2) + l] (low if j even), fifth bit in
    // bit j of qh[l].
    const int j = e / 32, l = e % 32, q = code(e);
    block.qs[32 * (j / 2) + l] |= static_cast<uint8_t>((q & 0xF) << (4 * (j % 2)));
    block.qh[l] |= static_cast<uint8_t>((q >> 4) << j);
  }
  const auto out = decode(TensorType::Q5_K, as_bytes(std::vector<BlockQ5_K>{block}), 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    const double expected = 0.125 * sc[j] * code(e) - 0.0625 * m[j];
    ASSERT_EQ(out[e], expected) << "element " << e;
  }
}

TEST(DequantizeRow, Q6_KCombinesLowNibblesHighBitsAndSignedScales) {
  const uint16_t d_bits[2] = {0x2800, 0xB000};  // 1/32, -1/8
  const float d[2] = {0.03125f, -0.125f};
  auto scale = [](int b, int t) { return (t * 37 + b * 101) % 255 - 127; };  // -127..127
  auto code = [](int b, int e) { return (e * 11 + b * 7 + 3) % 64; };        // 6-bit q
  std::vector<BlockQ6_K> blocks(2);
  for (int b = 0; b < 2; ++b) {
    std::memset(&blocks[b], 0, sizeof(BlockQ6_K));
    blocks[b].d = d_bits[b];
    for (int t = 0; t < 16; ++t) blocks[b].scales[t] = static_cast<int8_t>(scale(b, t));
    for (int e = 0; e < 256; ++e) {
      // Element 128h + 32k + l: low 4 bits in ql[64h + l + 32(k&1)] (high nibble when k >= 2),
      // top 2 bits in bits 2k..2k+1 of qh[32h + l].
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int q = code(b, e);
      blocks[b].ql[64 * h + l + 32 * (k & 1)] |= static_cast<uint8_t>((q & 0xF) << (4 * (k >> 1)));
      blocks[b].qh[32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * k));
    }
  }
  const auto out = decode(TensorType::Q6_K, as_bytes(blocks), 512);
  for (int b = 0; b < 2; ++b) {
    for (int e = 0; e < 256; ++e) {
      const double expected = double(d[b]) * scale(b, e / 16) * (code(b, e) - 32);
      ASSERT_EQ(out[256 * b + e], expected) << "block " << b << " element " << e;
    }
  }
}

TEST(DequantizeRow, RejectsTypeWithoutDecoderNamingIt) {
  std::vector<uint8_t> bytes(176);
  std::vector<float> out(256);
  try {
    dequantize_row(TensorType::Q3_K, bytes.data(), out.data(), 256);
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("Q3_K"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(has_decoder(TensorType::Q3_K));
  EXPECT_FALSE(has_decoder(TensorType::Q5_1));
  EXPECT_FALSE(has_decoder(TensorType::IQ4_NL));
  for (auto type :
       {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
        TensorType::Q5_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    EXPECT_TRUE(has_decoder(type)) << gguf::type_name(type);
  }
}

}  // namespace
}  // namespace augur::tensor
