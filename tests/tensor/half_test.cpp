// fp16 / bf16 conversions: known encodings from the IEEE layouts, round-to-nearest-even ties,
// subnormals, overflow, NaN; fp16 cross-checked against the CPU's F16C instructions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "tensor/matrix.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace augur::tensor {
namespace {

float from_bits(uint32_t u) {
  return std::bit_cast<float>(u);
}

TEST(Fp16, EncodesKnownValues) {
  struct Case {
    float value;
    uint16_t bits;
  };
  // sign | 5-bit exponent (bias 15) | 10-bit mantissa
  const Case cases[] = {
      {1.0f, 0x3C00},
      {-2.0f, 0xC000},
      {0.5f, 0x3800},
      {65504.0f, 0x7BFF},
      {std::ldexp(1.0f, -14), 0x0400},     // smallest normal
      {std::ldexp(1.0f, -24), 0x0001},     // smallest subnormal
      {std::ldexp(1023.0f, -24), 0x03FF},  // largest subnormal
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {std::numeric_limits<float>::infinity(), 0x7C00},
      {-std::numeric_limits<float>::infinity(), 0xFC00},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(fp32_to_fp16(c.value), c.bits) << c.value;
    EXPECT_EQ(std::bit_cast<uint32_t>(fp16_to_fp32(c.bits)), std::bit_cast<uint32_t>(c.value))
        << std::hex << c.bits;
  }
}

TEST(Fp16, RoundsToNearestEven) {
  const float ulp_at_one = std::ldexp(1.0f, -10);
  EXPECT_EQ(fp32_to_fp16(1.0f + ulp_at_one / 2), 0x3C00);      // tie -> even (down)
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * ulp_at_one / 2), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + ulp_at_one / 2, 2.0f)), 0x3C01);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + 3 * ulp_at_one / 2, 0.0f)), 0x3C01);
  EXPECT_EQ(fp32_to_fp16(-(1.0f + 3 * ulp_at_one / 2)), 0xBC02);
  // Mantissa carry into the exponent: 2 - ulp/2 is a tie between 0x3FFF (odd) and 2.0.
  EXPECT_EQ(fp32_to_fp16(2.0f - ulp_at_one / 2), 0x4000);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(2.0f - ulp_at_one / 2, 0.0f)), 0x3FFF);
}

TEST(Fp16, OverflowsToInfinityAtHalfwayPastMax) {
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);  // tie between 65504 (odd) and 2^16 -> inf
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::max()), 0x7C00);
}

TEST(Fp16, RoundsSubnormalsToNearestEven) {
  const float unit = std::ldexp(1.0f, -24);   // one subnormal step
  EXPECT_EQ(fp32_to_fp16(unit / 2), 0x0000);  // tie -> 0
  EXPECT_EQ(fp32_to_fp16(std::nextafter(unit / 2, 1.0f)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(unit / 4), 0x0000);
  EXPECT_EQ(fp32_to_fp16(1.5f * unit), 0x0002);  // tie -> even 2
  EXPECT_EQ(fp32_to_fp16(2.5f * unit), 0x0002);  // tie -> even 2
  EXPECT_EQ(fp32_to_fp16(-2.5f * unit), 0x8002);
  EXPECT_EQ(fp32_to_fp16(1023.5f * unit), 0x0400);  // tie, rounds up into the smallest normal
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::denorm_min()), 0x8000);
}

TEST(Fp16, NanStaysNan) {
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7C01)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0xFE00)));
  const uint16_t h = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  // A NaN whose payload sits only in the low float bits must not become infinity.
  const uint16_t low_payload = fp32_to_fp16(from_bits(0x7F800001));
  EXPECT_NE(low_payload & 0x03FF, 0);
  EXPECT_EQ(fp32_to_fp16(from_bits(0xFFC00000)) & 0x8000, 0x8000);
}

TEST(Fp16, EveryHalfRoundTripsExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7C00, 0x7C00u);
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
      continue;
    }
    ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
  }
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hardware_fp16(float f) {
  return static_cast<uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}
__attribute__((target("f16c"))) float hardware_fp32(uint16_t h) {
  return _cvtsh_ss(h);
}

TEST(Fp16, MatchesF16cInstructions) {
  // CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c").
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || (ecx & (1u << 29)) == 0) {
    GTEST_SKIP() << "CPU without F16C";
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float mine = fp16_to_fp32(static_cast<uint16_t>(h));
    const float hw = hardware_fp32(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      EXPECT_TRUE(std::isnan(mine));
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(mine), std::bit_cast<uint32_t>(hw)) << std::hex << h;
    }
  }
  std::mt19937 rng(7);
  // Random bit patterns, plus values concentrated near the fp16 range where rounding is subtle.
  for (int i = 0; i < 1'000'000; ++i) {
    uint32_t bits = rng();
    if (i % 2) bits = (bits & 0x807FFFFFu) | ((0x60u + (rng() % 0x40u)) << 23);  // 2^-31..2^32
    const float f = from_bits(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), hardware_fp16(f)) << std::hex << bits;
  }
}
#endif

TEST(Bf16, EncodesAndRoundsToNearestEven) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3F808000)), 0x3F80);  // tie -> even (down)
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3F818000)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x7F7FFFFF)), 0x7F80);  // rounds up to infinity
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, KeepsSubnormalsAndRoundsThem) {
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00010000)), 0x0001);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00008000)), 0x0000);  // tie -> even 0
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00018000)), 0x0002);  // tie -> even 2
  EXPECT_EQ(fp32_to_bf16(from_bits(0x80018000)), 0x8002);
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16_to_fp32(0x0001)), 0x00010000u);
}

TEST(Bf16, NanIsForcedQuiet) {
  EXPECT_EQ(fp32_to_bf16(from_bits(0x7F800001)), 0x7FC0);  // signalling, low payload
  EXPECT_EQ(fp32_to_bf16(from_bits(0xFF810000)), 0xFFC1);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(0x7FC0)));
}

TEST(Bf16, EveryBfloatRoundTripsExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(h));
    EXPECT_EQ(std::bit_cast<uint32_t>(f), h << 16);
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_bf16(f), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace augur::tensor
