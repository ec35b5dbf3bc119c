// Attention inner loops on every ISA this CPU runs: scores, softmax (and its exp) and the weighted
// sum against plain double-precision references, the properties batch invariance rests on (a key's
// score does not depend on how many keys there are or where the key sits in a group), and, bit for
// bit, the llama.cpp (AVX-512 build) operation orders the kernels reproduce, written out below
// with one-rounding fmaf.
#include "kernels/attention_ops.h"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/isa.h"

namespace augur::kernels {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

uint32_t bits(float x) {
  return std::bit_cast<uint32_t>(x);
}

// Distance from the double `want` to the float `got`, in units of the float spacing at `want`
// (normal range only).
double ulps(float got, double want) {
  int exponent = 0;
  std::frexp(want, &exponent);  // want = m * 2^exponent, m in [0.5, 1)
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, exponent - 24);
}

class AttentionOps : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { set_isa_for_testing(GetParam()); }
  void TearDown() override { set_isa_for_testing(supported_isas().back()); }
};

TEST_P(AttentionOps, ScoresAndWeightedSumMatchAPlainReference) {
  for (int64_t head_dim : {1, 7, 8, 16, 24, 64, 80, 128, 130, 256}) {
    for (int64_t n_keys : {1, 2, 5, 8, 9, 16, 23, 33}) {
      const auto q = random_floats(head_dim, 1);
      const auto keys = random_floats(n_keys * head_dim, 2);
      const auto values = random_floats(n_keys * head_dim, 3);
      const auto w = random_floats(n_keys, 4);
      std::vector<float> scores(n_keys);
      attention_scores(q.data(), keys.data(), n_keys, head_dim, 0.125f, scores.data());
      std::vector<float> out(head_dim, 0.5f);
      attention_weighted_sum(w.data(), values.data(), n_keys, head_dim, out.data());
      for (int64_t k = 0; k < n_keys; ++k) {
        double want = 0;
        for (int64_t d = 0; d < head_dim; ++d) want += double(q[d]) * keys[k * head_dim + d];
        EXPECT_NEAR(scores[k], want * 0.125, 1e-5) << "head_dim " << head_dim << " key " << k;
      }
      for (int64_t d = 0; d < head_dim; ++d) {
        double want = 0.5;
        for (int64_t k = 0; k < n_keys; ++k) want += double(w[k]) * values[k * head_dim + d];
        EXPECT_NEAR(out[d], want, 1e-5) << "head_dim " << head_dim << " dim " << d;
      }
    }
  }
}

// Keys are scored eight at a time (four on the portable path), a short last group repeating the
// last key: a key's score must be bitwise the same whatever the key count and whichever slot of a
// group it lands in, or verify rows would differ from decode rows.
TEST_P(AttentionOps, KeyScoreIsBitwiseIndependentOfKeyCountAndSlot) {
  for (int64_t head_dim : {5, 32, 64, 72}) {
    const int64_t max_keys = 40;
    const auto q = random_floats(head_dim, 5);
    const auto keys = random_floats((max_keys + 8) * head_dim, 6);
    // reference[k]: key k scored alone.
    std::vector<float> reference(max_keys + 8);
    for (int64_t k = 0; k < max_keys + 8; ++k) {
      attention_scores(q.data(), keys.data() + k * head_dim, 1, head_dim, 0.3f, &reference[k]);
    }
    for (int64_t offset = 0; offset < 8; ++offset) {
      for (int64_t n_keys = 1; n_keys <= max_keys; ++n_keys) {
        std::vector<float> scores(n_keys + 1, -7.0f);
        attention_scores(q.data(), keys.data() + offset * head_dim, n_keys, head_dim, 0.3f,
                         scores.data());
        for (int64_t k = 0; k < n_keys; ++k) {
          ASSERT_EQ(bits(scores[k]), bits(reference[offset + k]))
              << "head_dim " << head_dim << " offset " << offset << " n_keys " << n_keys << " key "
              << k;
        }
        EXPECT_EQ(scores[n_keys], -7.0f) << "wrote past n_keys " << n_keys;
      }
    }
  }
}

// The multi-query forms (one kv head's query heads, several rows, each with its own key count)
// give every query bitwise what the one-query forms give it.
TEST_P(AttentionOps, SharedKeysGiveEachQueryItsOwnResultBitwise) {
  for (int64_t head_dim : {32, 64, 100, 128}) {
    for (int64_t n_queries : {1, 2, 3, 5, 9}) {
      const int64_t max_keys = 150;
      const auto keys = random_floats(max_keys * head_dim, 41);
      const auto values = random_floats(max_keys * head_dim, 42);
      const auto queries = random_floats(n_queries * head_dim, 43);
      std::vector<int64_t> n_keys(n_queries);
      std::vector<const float*> q(n_queries), w(n_queries);
      std::vector<std::vector<float>> scores(n_queries, std::vector<float>(max_keys));
      std::vector<std::vector<float>> out(n_queries, std::vector<float>(head_dim, 0.25f));
      std::vector<float*> score_rows(n_queries), out_rows(n_queries);
      for (int64_t i = 0; i < n_queries; ++i) {
        n_keys[i] = max_keys - 37 * i % 149;
        q[i] = queries.data() + i * head_dim;
        w[i] = scores[i].data();
        score_rows[i] = scores[i].data();
        out_rows[i] = out[i].data();
      }
      attention_scores_multi(q.data(), n_queries, keys.data(), n_keys.data(), head_dim, 0.3f,
                             score_rows.data());
      for (int64_t i = 0; i < n_queries; ++i) softmax_inplace(scores[i].data(), n_keys[i]);
      attention_weighted_sum_multi(w.data(), n_queries, values.data(), n_keys.data(), head_dim,
                                   out_rows.data());
      for (int64_t i = 0; i < n_queries; ++i) {
        std::vector<float> one_scores(n_keys[i]), one_out(head_dim, 0.25f);
        attention_scores(q[i], keys.data(), n_keys[i], head_dim, 0.3f, one_scores.data());
        softmax_inplace(one_scores.data(), n_keys[i]);
        attention_weighted_sum(one_scores.data(), values.data(), n_keys[i], head_dim,
                               one_out.data());
        for (int64_t k = 0; k < n_keys[i]; ++k) {
          ASSERT_EQ(bits(scores[i][k]), bits(one_scores[k])) << "query " << i << " key " << k;
        }
        for (int64_t d = 0; d < head_dim; ++d) {
          ASSERT_EQ(bits(out[i][d]), bits(one_out[d]))
              << "head_dim " << head_dim << " queries " << n_queries << " query " << i;
        }
      }
    }
  }
}

// Every 61st float in [-104, 0] (about 18 million values): at most 2 floats from the correctly
// rounded exp (llama.cpp's expf is off by up to 2.24 ulp of the exact value: over all floats of
// the range, 0.4 % of results are 2 floats away, none more) while the result is normal, within two
// subnormal steps below FLT_MIN, and 0 once it underflows.
TEST_P(AttentionOps, ExpIsWithinTwoFloatsOfCorrectlyRoundedOverTheSoftmaxRange) {
  std::vector<float> x;
  for (uint32_t b = bits(-0.0f); b <= bits(-104.0f); b += 61) x.push_back(std::bit_cast<float>(b));
  for (float special :
       {0.0f, -0.0f, -104.0f, -110.0f, -1e30f, -FLT_MAX, -std::numeric_limits<float>::infinity()}) {
    x.push_back(special);
  }
  std::vector<float> y(x.size());
  exp_nonpositive(x.data(), static_cast<int64_t>(x.size()), y.data());
  double worst_ulps = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    if (want >= FLT_MIN) {
      const auto nearest = static_cast<float>(want);
      const int64_t floats_away =
          std::abs(static_cast<int64_t>(bits(y[i])) - static_cast<int64_t>(bits(nearest)));
      ASSERT_LE(floats_away, 2) << "exp(" << x[i] << ") = " << y[i] << ", want " << want;
      worst_ulps = std::max(worst_ulps, ulps(y[i], want));
    } else {
      ASSERT_LE(std::fabs(y[i] - want), std::ldexp(1.0, -148))
          << "exp(" << x[i] << ") = " << y[i] << ", want " << want;
    }
  }
  EXPECT_LT(worst_ulps, 2.25);
  EXPECT_EQ(y[y.size() - 7], 1.0f);  // exp(0)
  EXPECT_EQ(y[y.size() - 6], 1.0f);  // exp(-0)
  for (size_t i = y.size() - 4; i < y.size(); ++i) EXPECT_EQ(bits(y[i]), 0u) << x[i];
  RecordProperty("worst_ulps", std::to_string(worst_ulps));
}

// Softmax of n = 1..100 values, some of them hugely negative or -inf, against
// exp(x - max) / sum in double (x - max rounded to float first, as any float softmax does).
TEST_P(AttentionOps, SoftmaxMatchesADoublePrecisionReference) {
  const float specials[] = {-1e30f, -std::numeric_limits<float>::infinity(), -FLT_MAX, -87.0f,
                            -100.0f};
  for (int64_t n = 1; n <= 100; ++n) {
    for (float spread : {1.0f, 30.0f, 120.0f}) {
      auto x = random_floats(n, 7 + static_cast<uint32_t>(n), -spread, spread);
      for (int64_t i = 1; i < n; i += 7) x[i] = specials[i % 5];
      const auto input = x;
      softmax_inplace(x.data(), n);
      float max = -INFINITY;
      for (float v : input) max = std::max(max, v);
      std::vector<double> want(n);
      double total = 0;
      for (int64_t i = 0; i < n; ++i) total += want[i] = std::exp(double(input[i] - max));
      double got_total = 0;
      for (int64_t i = 0; i < n; ++i) {
        want[i] /= total;
        got_total += x[i];
        if (want[i] >= 1e-30) {
          EXPECT_LE(std::fabs(x[i] - want[i]) / want[i], 1e-6)
              << "n " << n << " spread " << spread << " i " << i << " x " << input[i];
        } else {
          EXPECT_LE(std::fabs(x[i] - want[i]), 1e-36) << "n " << n << " i " << i;
        }
      }
      EXPECT_NEAR(got_total, 1.0, 1e-6) << "n " << n << " spread " << spread;
    }
  }
}

// The sum is llama.cpp's: groups of 16 exponentials (the last padded with zeros) each summed in
// float as lanes l + l+8, then l + l+4, then (0+2) + (1+3); the group sums added in double; every
// value times float(1 / sum). Checked bitwise with the kernel's own exponentials.
TEST_P(AttentionOps, SoftmaxSumsFixedGroupsOfSixteenInDouble) {
  for (int64_t n : {1, 15, 16, 17, 40, 64, 99}) {
    auto x = random_floats(n, 11 + static_cast<uint32_t>(n), -20.0f, 20.0f);
    float max = -INFINITY;
    for (float v : x) max = std::max(max, v);
    std::vector<float> shifted(n), e(n);
    for (int64_t i = 0; i < n; ++i) shifted[i] = x[i] - max;
    exp_nonpositive(shifted.data(), n, e.data());
    double sum = 0;
    for (int64_t i = 0; i < n; i += 16) {
      float group[16] = {};
      for (int64_t lane = 0; lane < 16 && i + lane < n; ++lane) group[lane] = e[i + lane];
      float eight[8], four[4];
      for (int lane = 0; lane < 8; ++lane) eight[lane] = group[lane] + group[lane + 8];
      for (int lane = 0; lane < 4; ++lane) four[lane] = eight[lane] + eight[lane + 4];
      sum += double((four[0] + four[2]) + (four[1] + four[3]));
    }
    const auto inv = static_cast<float>(1.0 / sum);
    softmax_inplace(x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits(x[i]), bits(e[i] * inv)) << "n " << n << " i " << i;
    }
  }
}

// llama.cpp's arithmetic, as the reference logits' AVX-512 build runs it -----------------------

// ggml_vec_dot_f32: four 16-float FMA chains over 64-element steps (lane l of 64 takes elements
// l, l+64, ...), reduced pairwise (0+2, 1+3, then the two), then _mm512_reduce_add_ps (upper half
// plus lower, then again, then lanes (0+2, 1+3), then the two); the elements after the last whole
// step added one by one as separately rounded products.
float llama_cpp_vec_dot_f32(const float* x, const float* y, int64_t n) {
  const int64_t whole = n / 64 * 64;
  float acc[64] = {};
  for (int64_t d = 0; d < whole; d += 64) {
    for (int lane = 0; lane < 64; ++lane)
      acc[lane] = std::fmaf(x[d + lane], y[d + lane], acc[lane]);
  }
  float v16[16], v8[8], v4[4];
  for (int l = 0; l < 16; ++l) v16[l] = (acc[l] + acc[32 + l]) + (acc[16 + l] + acc[48 + l]);
  for (int l = 0; l < 8; ++l) v8[l] = v16[l + 8] + v16[l];
  for (int l = 0; l < 4; ++l) v4[l] = v8[l + 4] + v8[l];
  float sum = (v4[0] + v4[2]) + (v4[1] + v4[3]);
  for (int64_t d = whole; d < n; ++d) {
    const float product = x[d] * y[d];
    sum += product;
  }
  return sum;
}

// tinyBLAS (llamafile_sgemm, 16-float registers) for out[d] = sum_k w[k] values[k][d]: sixteen FMA
// chains, chain r taking keys r, r+16, ..., then _mm512_reduce_add_ps over them.
float llama_cpp_tinyblas_dot(const float* w, const float* values, int64_t n_keys, int64_t head_dim,
                             int64_t d) {
  float chain[16] = {};
  for (int64_t k = 0; k < n_keys; ++k) {
    chain[k % 16] = std::fmaf(values[k * head_dim + d], w[k], chain[k % 16]);
  }
  float v8[8], v4[4];
  for (int l = 0; l < 8; ++l) v8[l] = chain[l + 8] + chain[l];
  for (int l = 0; l < 4; ++l) v4[l] = v8[l + 4] + v8[l];
  return (v4[0] + v4[2]) + (v4[1] + v4[3]);
}

// ggml_v_expf: n = round(x log2 e), b = x - n ln2 in two steps, j = the degree-5 polynomial with
// its leading 1, result = vscalefps(j, n) = j * 2^n rounded once; 0 when |n| > 192 (x <= 0).
float llama_cpp_expf(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fmaf(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fmaf(-n, 0x1.7f7d1cp-20f, std::fmaf(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j = std::fmaf(std::fmaf(std::fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                      std::fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                            u, std::fmaf(0x1.ffffecp-1f, b, 1.0f));
  if (!(std::fabs(n) <= 192.0f)) return 0.0f;
  return std::ldexp(j, static_cast<int>(n));
}

// Scores are llama.cpp's KQ (vec_dot_f32, then times the scale) bit for bit: on every path for
// heads shorter than 128 (no FMA chain there), on the AVX2 path for all.
TEST_P(AttentionOps, ScoresAreLlamaCppsVecDotBitForBit) {
  for (int64_t head_dim : {8, 32, 64, 72, 100, 128, 200, 256}) {
    if (GetParam() == Isa::kScalar && head_dim >= 128) continue;
    const int64_t n_keys = 21;
    const auto q = random_floats(head_dim, 21);
    const auto keys = random_floats(n_keys * head_dim, 22);
    std::vector<float> scores(n_keys);
    attention_scores(q.data(), keys.data(), n_keys, head_dim, 0.125f, scores.data());
    for (int64_t k = 0; k < n_keys; ++k) {
      const float want = llama_cpp_vec_dot_f32(q.data(), keys.data() + k * head_dim, head_dim);
      ASSERT_EQ(bits(scores[k]), bits(want * 0.125f)) << "head_dim " << head_dim << " key " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EverySupportedIsa, AttentionOps, ::testing::ValuesIn(supported_isas()),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

class AttentionOpsAvx2 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_supports(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  }
};

// The AVX2 exp is llama.cpp's bit for bit, subnormal results included.
TEST_F(AttentionOpsAvx2, ExpIsLlamaCppsBitForBit) {
  std::vector<float> x;
  for (uint32_t b = bits(-0.0f); b <= bits(-110.0f); b += 257) x.push_back(std::bit_cast<float>(b));
  std::vector<float> y(x.size());
  detail::exp_nonpositive_avx2(x.data(), static_cast<int64_t>(x.size()), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(bits(y[i]), bits(llama_cpp_expf(x[i]))) << "exp(" << x[i] << ")";
  }
}

// The AVX2 weighted sum is tinyBLAS's bit for bit (added to what out held: here 0), for head sizes
// with partial 8-float blocks and key counts around multiples of 16.
TEST_F(AttentionOpsAvx2, WeightedSumIsLlamaCppsTinyBlasBitForBit) {
  for (int64_t head_dim : {5, 32, 64, 100, 128}) {
    for (int64_t n_keys : {1, 15, 16, 17, 50}) {
      const auto w = random_floats(n_keys, 31, 0.0f, 1.0f);
      const auto values = random_floats(n_keys * head_dim, 32);
      std::vector<float> out(head_dim, 0.0f);
      set_isa_for_testing(Isa::kAvx2);
      attention_weighted_sum(w.data(), values.data(), n_keys, head_dim, out.data());
      for (int64_t d = 0; d < head_dim; ++d) {
        ASSERT_EQ(bits(out[d]),
                  bits(llama_cpp_tinyblas_dot(w.data(), values.data(), n_keys, head_dim, d)))
            << "head_dim " << head_dim << " n_keys " << n_keys << " d " << d;
      }
    }
  }
}

// The portable exp does the FMAs in double: it equals the AVX2 one (llama.cpp's) except where a
// double rounding lands differently, which these 4.4 million inputs never hit.
TEST_F(AttentionOpsAvx2, PortableExpEqualsAvx2Exp) {
  std::vector<float> x;
  for (uint32_t b = bits(-0.0f); b <= bits(-110.0f); b += 251) x.push_back(std::bit_cast<float>(b));
  std::vector<float> avx2(x.size()), portable(x.size());
  detail::exp_nonpositive_avx2(x.data(), static_cast<int64_t>(x.size()), avx2.data());
  set_isa_for_testing(Isa::kScalar);
  exp_nonpositive(x.data(), static_cast<int64_t>(x.size()), portable.data());
  set_isa_for_testing(supported_isas().back());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(bits(portable[i]), bits(avx2[i])) << "exp(" << x[i] << ")";
  }
}

}  // namespace
}  // namespace augur::kernels
