// Attention inner loops on every ISA this CPU runs, against a plain double-precision reference,
// for head sizes with and without a tail and several key counts.
#include "kernels/attention_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/isa.h"

namespace augur::kernels {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

class AttentionOps : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { set_isa_for_testing(GetParam()); }
  void TearDown() override { set_isa_for_testing(supported_isas().back()); }
};

TEST_P(AttentionOps, ScoresAndWeightedSumMatchAPlainReference) {
  for (int64_t head_dim : {1, 7, 8, 16, 24, 64, 80, 128, 130, 256}) {
    for (int64_t n_keys : {1, 2, 5, 33}) {
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

INSTANTIATE_TEST_SUITE_P(EverySupportedIsa, AttentionOps, ::testing::ValuesIn(supported_isas()),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace augur::kernels
