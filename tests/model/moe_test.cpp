// The mixture-of-experts block (model/blocks/moe.h) against a float64 re-implementation of the
// same formula in this file, on random small F32 weights written to a GGUF and loaded back as
// expert slices: routing (softmax, top-k with ties, renormalisation), the FFN output, and bitwise
// batch invariance of a row.
#include "model/blocks/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "support/run_command.h"

namespace augur::model::blocks {
namespace {

// Experts in descending float64 probability, ties in ascending index: the rule moe.h documents.
std::vector<int> reference_order(const std::vector<double>& probs) {
  std::vector<int> order(probs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
  return order;
}

std::vector<double> reference_softmax(const std::vector<double>& logits) {
  const double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t e = 0; e < p.size(); ++e) sum += p[e] = std::exp(logits[e] - max);
  for (double& v : p) v /= sum;
  return p;
}

struct RouteResult {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};

RouteResult route(std::vector<float> logits, int64_t k) {
  RouteResult r{std::vector<int32_t>(k), std::vector<float>(k)};
  std::vector<int32_t> order(logits.size());
  route_row(logits, r.experts, r.weights, order);
  return r;
}

TEST(RouteRow, MatchesFloat64SoftmaxTopKAndRenormalisation) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const auto& [n_expert, k] : {std::pair{8, 2}, std::pair{20, 4}, std::pair{5, 5}}) {
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> logits(n_expert);
      for (float& v : logits) v = normal(rng);
      const auto probs = reference_softmax(std::vector<double>(logits.begin(), logits.end()));
      const auto order = reference_order(probs);
      const auto got = route(logits, k);
      double selected = 0;
      for (int slot = 0; slot < k; ++slot) selected += probs[order[slot]];
      for (int slot = 0; slot < k; ++slot) {
        ASSERT_EQ(got.experts[slot], order[slot]) << "trial " << trial << " slot " << slot;
        EXPECT_NEAR(got.weights[slot], probs[order[slot]] / selected, 1e-6)
            << "trial " << trial << " slot " << slot;
      }
    }
  }
}

TEST(RouteRow, HighestProbabilityComesFirst) {
  const auto r = route({0.0f, 5.0f, 1.0f, 4.0f}, 3);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 3, 2}));
  EXPECT_GT(r.weights[0], r.weights[1]);
  EXPECT_GT(r.weights[1], r.weights[2]);
}

TEST(RouteRow, EqualProbabilitiesGoToTheLowerExpertIndexFirst) {
  const auto two = route({1.0f, 3.0f, 3.0f, 0.0f, 3.0f}, 2);
  EXPECT_EQ(two.experts, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(two.weights, (std::vector<float>{0.5f, 0.5f}));
  const auto three = route({1.0f, 3.0f, 3.0f, 0.0f, 3.0f}, 3);
  EXPECT_EQ(three.experts, (std::vector<int32_t>{1, 2, 4}));
  // More experts than ggml-cpu's std::sort settles in index order: the same rule still holds.
  const auto flat = route(std::vector<float>(40, 0.25f), 4);
  EXPECT_EQ(flat.experts, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(flat.weights, (std::vector<float>(4, 0.25f)));
}

TEST(RouteRow, NanLogitsStillGiveDistinctExpertsInRange) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto r = route({2.0f, nan, 1.0f, nan, 3.0f}, 3);
  std::vector<int32_t> sorted = r.experts;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  EXPECT_GE(sorted.front(), 0);
  EXPECT_LT(sorted.back(), 5);
}

// ---- the whole block on random weights ----

struct Shape {
  int64_t n_embd, n_ff_exp, n_expert, k;
};

void PrintTo(const Shape& s, std::ostream* os) {
  *os << "embd " << s.n_embd << ", ffn " << s.n_ff_exp << ", top " << s.k << " of " << s.n_expert;
}

// Random F32 weights of one MoE layer, in GGUF layout, kept for the float64 reference.
struct RandomExperts {
  explicit RandomExperts(const Shape& s) : shape(s), path(testing::temp_path("moe.gguf")) {
    std::mt19937 rng(7 + static_cast<unsigned>(s.n_expert));
    const auto fill = [&](std::vector<float>& v, size_t n, double scale) {
      std::normal_distribution<float> normal(0.0f, static_cast<float>(scale));
      v.resize(n);
      for (float& x : v) x = normal(rng);
    };
    const auto d = static_cast<size_t>(s.n_embd), f = static_cast<size_t>(s.n_ff_exp),
               n = static_cast<size_t>(s.n_expert);
    fill(router, n * d, 3.0 / std::sqrt(double(d)));  // logits spread over a few units
    fill(gate, n * f * d, 1.0 / std::sqrt(double(d)));
    fill(up, n * f * d, 1.0 / std::sqrt(double(d)));
    fill(down, n * d * f, 1.0 / std::sqrt(double(f)));
    {
      gguf::Writer out(path);
      out.add_tensor("blk.0.ffn_gate_inp.weight", gguf::TensorType::F32, {s.n_embd, s.n_expert});
      out.add_tensor("blk.0.ffn_gate_exps.weight", gguf::TensorType::F32,
                     {s.n_embd, s.n_ff_exp, s.n_expert});
      out.add_tensor("blk.0.ffn_up_exps.weight", gguf::TensorType::F32,
                     {s.n_embd, s.n_ff_exp, s.n_expert});
      out.add_tensor("blk.0.ffn_down_exps.weight", gguf::TensorType::F32,
                     {s.n_ff_exp, s.n_embd, s.n_expert});
      out.write_header();
      for (const auto& [name, v] : {std::pair{"blk.0.ffn_gate_inp.weight", &router},
                                    std::pair{"blk.0.ffn_gate_exps.weight", &gate},
                                    std::pair{"blk.0.ffn_up_exps.weight", &up},
                                    std::pair{"blk.0.ffn_down_exps.weight", &down}}) {
        out.write_tensor_data(name, std::span(reinterpret_cast<const uint8_t*>(v->data()),
                                              v->size() * sizeof(float)));
      }
      out.finish();
    }
    file = gguf::File::open(path);
    hp.n_embd = s.n_embd;
    hp.n_ff_exp = s.n_ff_exp;
    hp.n_expert = s.n_expert;
    hp.n_expert_used = s.k;
    weights = load_moe_weights(*file, 0, hp);
  }
  ~RandomExperts() { std::filesystem::remove(path); }

  // y[r] = sum_c W[r, c] x[c] of matrix `index` [rows, cols] of a stacked tensor.
  static std::vector<double> apply(const std::vector<float>& w, int64_t index, int64_t rows,
                                   int64_t cols, const std::vector<double>& x) {
    std::vector<double> y(rows);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) y[r] += double(w[(index * rows + r) * cols + c]) * x[c];
    }
    return y;
  }

  // The block's output for one row in float64; `renormalise` off plants the defect of using the
  // softmax probabilities as they are.
  std::vector<double> reference(const float* row, bool renormalise = true) const {
    const std::vector<double> u(row, row + shape.n_embd);
    const auto probs = reference_softmax(apply(router, 0, shape.n_expert, shape.n_embd, u));
    const auto order = reference_order(probs);
    double selected = 0;
    for (int64_t slot = 0; slot < shape.k; ++slot) selected += probs[order[slot]];
    std::vector<double> out(shape.n_embd);
    for (int64_t slot = 0; slot < shape.k; ++slot) {
      const int e = order[slot];
      auto g = apply(gate, e, shape.n_ff_exp, shape.n_embd, u);
      const auto v = apply(up, e, shape.n_ff_exp, shape.n_embd, u);
      for (int64_t i = 0; i < shape.n_ff_exp; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * v[i];
      const auto y = apply(down, e, shape.n_embd, shape.n_ff_exp, g);
      const double w = renormalise ? probs[e] / selected : probs[e];
      for (int64_t c = 0; c < shape.n_embd; ++c) out[c] += w * y[c];
    }
    return out;
  }

  Shape shape;
  std::filesystem::path path;
  std::vector<float> router, gate, up, down;  // [n_expert, n_embd], [n_expert, n_ff_exp, n_embd]
                                              // x2, [n_expert, n_embd, n_ff_exp]
  std::unique_ptr<gguf::File> file;
  HParams hp;
  MoeWeights weights;
};

std::vector<float> random_rows(int64_t n_rows, int64_t n_embd, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_rows * n_embd));
  for (float& v : x) v = normal(rng);
  return x;
}

double max_abs_diff(const float* got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t c = 0; c < want.size(); ++c) worst = std::max(worst, std::fabs(got[c] - want[c]));
  return worst;
}

constexpr int64_t kRows = 8;
constexpr double kAtol = 2e-5;  // float32 sums of a few dozen O(1) products

class MoeFfn : public ::testing::TestWithParam<Shape> {
 protected:
  MoeFfn() : experts(GetParam()), scratch(experts.hp, kRows), pool(2) {}
  std::vector<float> run(const std::vector<float>& x, int64_t n_rows) {
    std::vector<float> out(x.size());
    moe_ffn(experts.weights, x.data(), n_rows, out.data(), scratch, pool);
    return out;
  }
  RandomExperts experts;
  MoeScratch scratch;
  kernels::ThreadPool pool;
};

TEST_P(MoeFfn, MatchesFloat64Reimplementation) {
  const int64_t d = GetParam().n_embd;
  const auto x = random_rows(kRows, d, 3);
  const auto out = run(x, kRows);
  double worst = 0;
  for (int64_t row = 0; row < kRows; ++row) {
    worst = std::max(worst, max_abs_diff(&out[row * d], experts.reference(&x[row * d])));
  }
  EXPECT_LE(worst, kAtol);
  // The batch really shared experts (k * rows picks over fewer experts), so rows were gathered.
  std::vector<int> picks(GetParam().n_expert);
  for (int64_t i = 0; i < kRows * GetParam().k; ++i) ++picks[scratch.experts[i]];
  EXPECT_GT(*std::max_element(picks.begin(), picks.end()), 1);
  EXPECT_GT(std::count_if(picks.begin(), picks.end(), [](int n) { return n > 0; }), 1);
}

// The comparison above is not blind to the renormalisation: a reference without it is far off.
TEST_P(MoeFfn, ReferenceWithoutRenormalisationIsFarOff) {
  const int64_t d = GetParam().n_embd;
  const auto x = random_rows(kRows, d, 3);
  const auto out = run(x, kRows);
  double worst = 0;
  for (int64_t row = 0; row < kRows; ++row) {
    worst = std::max(worst, max_abs_diff(&out[row * d], experts.reference(&x[row * d], false)));
  }
  EXPECT_GT(worst, 100 * kAtol);
}

TEST_P(MoeFfn, RowIsBitwiseTheSameAloneOrInABatchOfEight) {
  const int64_t d = GetParam().n_embd;
  const auto x = random_rows(kRows, d, 5);
  const auto batch = run(x, kRows);
  // The same rows in reverse order: other neighbours within each expert's gathered rows.
  std::vector<float> reversed(x.size());
  for (int64_t row = 0; row < kRows; ++row) {
    std::memcpy(&reversed[row * d], &x[(kRows - 1 - row) * d], sizeof(float) * d);
  }
  const auto batch_reversed = run(reversed, kRows);
  for (int64_t row = 0; row < kRows; ++row) {
    const auto alone = run(std::vector<float>(&x[row * d], &x[(row + 1) * d]), 1);
    EXPECT_EQ(0, std::memcmp(alone.data(), &batch[row * d], sizeof(float) * d)) << "row " << row;
    EXPECT_EQ(0,
              std::memcmp(alone.data(), &batch_reversed[(kRows - 1 - row) * d], sizeof(float) * d))
        << "row " << row;
  }
}

TEST_P(MoeFfn, OutputMayAliasInput) {
  const int64_t d = GetParam().n_embd;
  auto x = random_rows(kRows, d, 9);
  const auto separate = run(x, kRows);
  moe_ffn(experts.weights, x.data(), kRows, x.data(), scratch, pool);
  EXPECT_EQ(0, std::memcmp(x.data(), separate.data(), sizeof(float) * x.size()));
}

INSTANTIATE_TEST_SUITE_P(Shapes, MoeFfn,
                         ::testing::Values(Shape{32, 16, 6, 2}, Shape{64, 32, 20, 4}),
                         [](const auto& info) {
                           return std::to_string(info.param.n_expert) + "experts_top" +
                                  std::to_string(info.param.k);
                         });

}  // namespace
}  // namespace augur::model::blocks
