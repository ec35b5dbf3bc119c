// The Gated DeltaNet block (model/blocks/gated_deltanet.h) on small random weights in a GGUF
// written here: against a float64 re-implementation of FIXTURES-more-archs.md section F, and
// for the properties speculative decoding needs — the conv window and S carried across forward
// calls, and M rows at once bitwise equal to the same rows one at a time (outputs and states).
#include "model/blocks/gated_deltanet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cache/model_cache.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "support/run_command.h"

namespace augur::model::blocks {
namespace {

// head_v_dim != head_k_dim and n_v_heads = 2 n_k_heads, so a transposed S or a grouped (not
// tiled) head mapping would show.
GatedDeltaNetShape test_shape() {
  GatedDeltaNetShape s;
  s.n_embd = 16;
  s.conv_kernel = 4;
  s.head_k_dim = 8;
  s.n_k_heads = 2;
  s.n_v_heads = 4;
  s.head_v_dim = 6;
  s.eps = 1e-6f;
  return s;
}

struct Tensor {
  std::string name;
  std::vector<int64_t> ne;
  std::vector<float> data;
};

// The layer's tensors with random values; ssm_a negative as -exp(A_log).
std::vector<Tensor> random_tensors(const GatedDeltaNetShape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto make = [&](const char* name, std::vector<int64_t> ne, float scale) {
    Tensor t{std::string("blk.0.") + name, ne, {}};
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    for (int64_t i = 0; i < n; ++i) t.data.push_back(normal(rng) * scale);
    return t;
  };
  std::vector<Tensor> t = {
      make("attn_qkv.weight", {s.n_embd, s.channels()}, 0.5f),
      make("attn_gate.weight", {s.n_embd, s.value_dim()}, 0.5f),
      make("ssm_conv1d.weight", {s.conv_kernel, s.channels()}, 0.5f),
      make("ssm_dt.bias", {s.n_v_heads}, 1.0f),
      make("ssm_a", {s.n_v_heads}, 1.0f),
      make("ssm_beta.weight", {s.n_embd, s.n_v_heads}, 0.5f),
      make("ssm_alpha.weight", {s.n_embd, s.n_v_heads}, 0.5f),
      make("ssm_norm.weight", {s.head_v_dim}, 1.0f),
      make("ssm_out.weight", {s.value_dim(), s.n_embd}, 0.5f),
  };
  for (float& a : t[4].data) a = -std::exp(a * 0.5f);
  return t;
}

std::filesystem::path write_gguf(const std::vector<Tensor>& tensors) {
  const auto path = testing::temp_path("gated-deltanet.gguf");
  gguf::Writer out(path);
  out.set_string("general.architecture", "test");
  for (const auto& t : tensors) out.add_tensor(t.name, gguf::TensorType::F32, t.ne);
  out.write_header();
  for (const auto& t : tensors) {
    out.write_tensor_data(t.name,
                          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.data.data()),
                                                   t.data.size() * sizeof(float)));
  }
  out.finish();
  return path;
}

// The float64 re-implementation: one row at a time from zero state, straight from the spec.
struct Reference {
  const GatedDeltaNetShape& s;
  const std::vector<Tensor>& t;
  std::vector<std::vector<double>> window;  // [channels][kernel - 1]
  std::vector<double> S;                    // [n_v_heads][head_k_dim][head_v_dim]

  Reference(const GatedDeltaNetShape& shape, const std::vector<Tensor>& tensors)
      : s(shape),
        t(tensors),
        window(static_cast<size_t>(shape.channels()),
               std::vector<double>(static_cast<size_t>(shape.conv_kernel - 1))),
        S(static_cast<size_t>(shape.n_v_heads * shape.head_k_dim * shape.head_v_dim)) {}

  const std::vector<float>& w(int i) const { return t[static_cast<size_t>(i)].data; }
  std::vector<double> project(int i, const float* x, int64_t rows) const {
    std::vector<double> y(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < s.n_embd; ++c) y[r] += double(w(i)[r * s.n_embd + c]) * x[c];
    }
    return y;
  }
  static double silu(double x) { return x / (1.0 + std::exp(-x)); }

  std::vector<double> row(const float* x) {
    const int64_t C = s.channels(), K = s.conv_kernel, dk = s.head_k_dim, dv = s.head_v_dim;
    const auto mixed = project(0, x, C);
    const auto z = project(1, x, s.value_dim());
    const auto b = project(5, x, s.n_v_heads);
    const auto al = project(6, x, s.n_v_heads);
    std::vector<double> c(static_cast<size_t>(C));
    for (int64_t ch = 0; ch < C; ++ch) {
      double sum = 0;
      for (int64_t j = 0; j < K - 1; ++j) sum += w(2)[ch * K + j] * window[ch][j];
      sum += w(2)[ch * K + K - 1] * mixed[ch];
      c[ch] = silu(sum);
      window[ch].erase(window[ch].begin());
      window[ch].push_back(mixed[ch]);
    }
    for (int64_t head = 0; head < 2 * s.n_k_heads; ++head) {
      double norm = 0;
      for (int64_t i = 0; i < dk; ++i) norm += c[head * dk + i] * c[head * dk + i];
      norm = std::max(std::sqrt(norm), 1e-6);
      for (int64_t i = 0; i < dk; ++i) c[head * dk + i] /= norm;
    }
    std::vector<double> o_all(static_cast<size_t>(s.value_dim()));
    for (int64_t h = 0; h < s.n_v_heads; ++h) {
      const double beta = 1.0 / (1.0 + std::exp(-b[h]));
      const double a = al[h] + w(3)[h];
      const double g = std::log1p(std::exp(a)) * w(4)[h];
      const double* q = &c[(h % s.n_k_heads) * dk];
      const double* k = &c[s.key_dim() + (h % s.n_k_heads) * dk];
      const double* v = &c[2 * s.key_dim() + h * dv];
      double* Sh = &S[h * dk * dv];
      for (int64_t i = 0; i < dk * dv; ++i) Sh[i] *= std::exp(g);
      std::vector<double> delta(static_cast<size_t>(dv));
      for (int64_t j = 0; j < dv; ++j) {
        double kS = 0;
        for (int64_t i = 0; i < dk; ++i) kS += Sh[i * dv + j] * k[i];
        delta[j] = (v[j] - kS) * beta;
      }
      for (int64_t i = 0; i < dk; ++i) {
        for (int64_t j = 0; j < dv; ++j) Sh[i * dv + j] += k[i] * delta[j];
      }
      double* o = &o_all[h * dv];
      for (int64_t j = 0; j < dv; ++j) {
        for (int64_t i = 0; i < dk; ++i) o[j] += Sh[i * dv + j] * q[i];
        o[j] /= std::sqrt(double(dk));
      }
      double ms = 0;
      for (int64_t j = 0; j < dv; ++j) ms += o[j] * o[j];
      const double inv = 1.0 / std::sqrt(ms / dv + s.eps);
      for (int64_t j = 0; j < dv; ++j) o[j] = o[j] * inv * w(7)[j] * silu(z[h * dv + j]);
    }
    std::vector<double> out(static_cast<size_t>(s.n_embd));
    for (int64_t r = 0; r < s.n_embd; ++r) {
      for (int64_t i = 0; i < s.value_dim(); ++i) out[r] += w(8)[r * s.value_dim() + i] * o_all[i];
    }
    return out;
  }
};

class GatedDeltaNetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tensors_ = random_tensors(shape_, 7);
    path_ = write_gguf(tensors_);
    file_ = gguf::File::open(path_);
    weights_ = load_gated_deltanet(*file_, 0, shape_);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < kRows * shape_.n_embd; ++i) x_.push_back(normal(rng));
  }
  void TearDown() override { std::filesystem::remove(path_); }

  cache::ModelCache make_cache() const {
    HParams hp;
    hp.n_head_kv = 1;
    hp.head_dim = 1;
    return cache::ModelCache({LayerCache::recurrent(shape_.state_floats())}, hp,
                             {.capacity = 64, .max_batch = kRows});
  }
  // Rows [first, first + n) of x_ on top of `cache`, committed; their outputs.
  std::vector<float> run(cache::ModelCache& cache, int64_t first, int64_t n) {
    GatedDeltaNetScratch scratch(shape_, n);
    std::vector<float> out(static_cast<size_t>(n * shape_.n_embd));
    Memory& memory = cache.memory();
    const MemorySegment segment{0, n, &memory};
    const int64_t n_past = memory.n_rows();
    gated_deltanet(weights_, shape_, 0, &x_[first * shape_.n_embd], n, {&segment, 1}, {&n_past, 1},
                   scratch, out.data(), pool_);
    memory.advance(n);
    cache.commit(n);
    return out;
  }
  static std::vector<float> state(const cache::ModelCache& cache) {
    const auto s = cache.state(0);
    return {s.begin(), s.end()};
  }

  static constexpr int64_t kRows = 9;
  const GatedDeltaNetShape shape_ = test_shape();
  std::vector<Tensor> tensors_;
  std::filesystem::path path_;
  std::unique_ptr<gguf::File> file_;
  GatedDeltaNetWeights weights_;
  std::vector<float> x_;
  kernels::ThreadPool pool_{2};
};

TEST_F(GatedDeltaNetTest, MatchesFloat64Reference) {
  auto cache = make_cache();
  const auto out = run(cache, 0, kRows);
  Reference ref(shape_, tensors_);
  double max_diff = 0, max_ref = 0;
  for (int64_t row = 0; row < kRows; ++row) {
    const auto expected = ref.row(&x_[row * shape_.n_embd]);
    for (int64_t i = 0; i < shape_.n_embd; ++i) {
      max_diff = std::max(max_diff, std::abs(expected[i] - out[row * shape_.n_embd + i]));
      max_ref = std::max(max_ref, std::abs(expected[i]));
    }
  }
  EXPECT_GT(max_ref, 0.1);  // outputs of a size where a wrong formula shows
  EXPECT_LT(max_diff, 1e-4 * max_ref) << "max |augur - float64| " << max_diff;
  std::printf("[deltanet] max |augur - float64| %g (outputs up to %g)\n", max_diff, max_ref);
  // The state after the last row: conv window (channel-major), then S of each value head.
  const auto s = state(cache);
  const int64_t W = shape_.conv_kernel - 1;
  for (int64_t ch = 0; ch < shape_.channels(); ++ch) {
    for (int64_t j = 0; j < W; ++j) {
      ASSERT_NEAR(s[ch * W + j], ref.window[ch][j], 1e-5 * (1 + std::abs(ref.window[ch][j])));
    }
  }
  for (size_t i = 0; i < ref.S.size(); ++i) {
    ASSERT_NEAR(s[shape_.conv_floats() + i], ref.S[i], 1e-4 * (1 + std::abs(ref.S[i]))) << i;
  }
}

TEST_F(GatedDeltaNetTest, StateCarriesAcrossForwardCalls) {
  auto whole = make_cache(), split = make_cache();
  const auto all = run(whole, 0, kRows);
  auto out = run(split, 0, 5);
  const auto rest = run(split, 5, kRows - 5);
  out.insert(out.end(), rest.begin(), rest.end());
  EXPECT_EQ(0, std::memcmp(all.data(), out.data(), all.size() * sizeof(float)));
  EXPECT_EQ(state(whole), state(split));
}

TEST_F(GatedDeltaNetTest, RowsAtOnceEqualOneAtATimeBitwise) {
  auto batch = make_cache(), single = make_cache();
  GatedDeltaNetScratch scratch(shape_, kRows);
  std::vector<float> all(static_cast<size_t>(kRows * shape_.n_embd));
  Memory& memory = batch.memory();
  const MemorySegment segment{0, kRows, &memory};
  const int64_t n_past = 0;
  gated_deltanet(weights_, shape_, 0, x_.data(), kRows, {&segment, 1}, {&n_past, 1}, scratch,
                 all.data(), pool_);
  memory.advance(kRows);
  for (int64_t row = 0; row < kRows; ++row) {
    const auto out = run(single, row, 1);
    ASSERT_EQ(0, std::memcmp(out.data(), &all[row * shape_.n_embd], out.size() * sizeof(float)))
        << "row " << row;
    // The state the batch kept after this row (what a rollback to it installs).
    const float* kept = memory.state(0, row + 1);
    ASSERT_EQ(std::vector<float>(kept, kept + shape_.state_floats()), state(single))
        << "state after row " << row;
  }
}

}  // namespace
}  // namespace augur::model::blocks
