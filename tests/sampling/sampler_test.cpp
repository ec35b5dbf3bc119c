// Sampler as a whole: option validation, sample() against distribution(), seeds, and the
// partial-sort paths on a 150k vocabulary against a full-sort reference.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "scripted_rng.h"

namespace augur::sampling {
namespace {

using testing::ScriptedRng;

struct BadOption {
  std::string option;
  std::function<void(SamplerConfig&)> set;
};

TEST(SamplerConfig, ValidateNamesTheOptionAndItsRange) {
  const std::vector<BadOption> cases = {
      {"temperature", [](SamplerConfig& c) { c.temperature = -0.1f; }},
      {"temperature", [](SamplerConfig& c) { c.temperature = std::nanf(""); }},
      {"temperature", [](SamplerConfig& c) { c.temperature = INFINITY; }},
      {"top_k", [](SamplerConfig& c) { c.top_k = -1; }},
      {"top_p", [](SamplerConfig& c) { c.top_p = 0.0f; }},
      {"top_p", [](SamplerConfig& c) { c.top_p = 1.5f; }},
      {"top_p", [](SamplerConfig& c) { c.top_p = std::nanf(""); }},
      {"min_p", [](SamplerConfig& c) { c.min_p = -0.01f; }},
      {"min_p", [](SamplerConfig& c) { c.min_p = 1.01f; }},
      {"repeat_penalty", [](SamplerConfig& c) { c.repeat_penalty = 0.0f; }},
      {"repeat_penalty", [](SamplerConfig& c) { c.repeat_penalty = -1.0f; }},
      {"repeat_last_n", [](SamplerConfig& c) { c.repeat_last_n = -2; }},
  };
  for (const auto& bad : cases) {
    SamplerConfig config;
    bad.set(config);
    try {
      config.validate();
      ADD_FAILURE() << bad.option << ": expected InvalidArgument";
    } catch (const InvalidArgument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(bad.option + " = "), std::string::npos) << message;
      EXPECT_NE(message.find("must be"), std::string::npos) << message;
    }
    EXPECT_THROW(Sampler(config, 8), InvalidArgument) << bad.option;
  }
}

TEST(SamplerConfig, DefaultsAndRangeEdgesAreValid) {
  EXPECT_NO_THROW(SamplerConfig{}.validate());
  SamplerConfig edges;
  edges.temperature = 0.0f;
  edges.top_k = 0;
  edges.top_p = 1.0f;
  edges.min_p = 1.0f;
  edges.repeat_last_n = -1;
  EXPECT_NO_THROW(edges.validate());
  edges.min_p = 0.0f;
  EXPECT_NO_THROW(edges.validate());
}

TEST(Sampler, RejectsAnEmptyVocabulary) {
  EXPECT_THROW(Sampler(SamplerConfig{}, 0), InvalidArgument);
}

// sample() must draw from exactly the vector it reports: script uniforms across the CDF and
// compare each token with draw() over distribution().
TEST(Sampler, SampleDrawsFromTheDistributionItReports) {
  SamplerConfig config;  // defaults: top-k 40, top-p .95, min-p .05, temperature .8
  const std::vector<float> logits = {0.3f, 2.0f, -1.0f, 1.5f, 1.9f, 0.0f, 2.2f, -0.5f};
  const std::vector<int32_t> history = {1, 6};
  config.repeat_penalty = 1.3f;
  Sampler sampler(config, static_cast<int>(logits.size()));

  std::vector<float> expected(logits.size());
  sampler.distribution(logits, history, expected);
  for (const double u : {0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999}) {
    std::vector<float> reported(logits.size(), -1.0f);
    ScriptedRng for_sample({u}), for_draw({u});
    const int32_t token = sampler.sample(logits, history, for_sample, reported);
    EXPECT_EQ(reported, expected);
    EXPECT_EQ(token, draw(expected, for_draw)) << "u = " << u;
    EXPECT_GT(expected[token], 0.0f);
    EXPECT_EQ(for_sample.n_used(), 1u);
    ScriptedRng again({u});  // without probs_out the token is the same
    EXPECT_EQ(sampler.sample(logits, history, again), token);
  }
}

// Seeded sample() frequencies against distribution(), chi-square with the stated bound: the
// 0.999 quantile for the kept cells' degrees of freedom (fixed seed, so deterministic).
TEST(Sampler, SampledFrequenciesMatchTheDistribution) {
  SamplerConfig config;
  config.top_k = 5;
  config.min_p = 0.0f;
  config.temperature = 1.0f;
  config.top_p = 1.0f;
  const std::vector<float> logits = {0.5f, 1.0f, -2.0f, 0.0f, 1.5f, 0.25f, 3.0f};
  Sampler sampler(config, static_cast<int>(logits.size()));
  std::vector<float> probs(logits.size());
  sampler.distribution(logits, {}, probs);

  constexpr int kDraws = 100000;
  std::vector<int> counts(logits.size(), 0);
  SeededRng rng(config.seed);
  for (int trial = 0; trial < kDraws; ++trial) ++counts[sampler.sample(logits, {}, rng)];
  double chi_square = 0.0;
  int n_kept = 0;
  for (size_t token = 0; token < logits.size(); ++token) {
    if (probs[token] == 0.0f) {
      EXPECT_EQ(counts[token], 0) << "token " << token;
      continue;
    }
    ++n_kept;
    const double expected = kDraws * static_cast<double>(probs[token]);
    chi_square += (counts[token] - expected) * (counts[token] - expected) / expected;
  }
  ASSERT_EQ(n_kept, 5);
  EXPECT_LT(chi_square, 18.47);  // chi-square 0.999 quantile, 4 degrees of freedom
}

TEST(Sampler, SameSeedReproducesTheTokenSequence) {
  const SamplerConfig config;
  constexpr int kVocab = 64;
  std::vector<float> logits(kVocab);
  for (int token = 0; token < kVocab; ++token) logits[token] = std::sin(token * 0.7f) * 3.0f;
  auto run = [&](uint64_t seed) {
    Sampler sampler(config, kVocab);
    SeededRng rng(seed);
    std::vector<int32_t> tokens;
    for (int step = 0; step < 200; ++step) tokens.push_back(sampler.sample(logits, tokens, rng));
    return tokens;
  };
  EXPECT_EQ(run(config.seed), run(config.seed));
  EXPECT_NE(run(config.seed), run(config.seed + 1));
}

// ---- 150k vocabulary against a straightforward full-sort reference -------------------------

// The documented pipeline with a full stable sort and no cleverness (no penalty).
std::vector<double> reference_distribution(const SamplerConfig& config,
                                           const std::vector<float>& logits) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  size_t n_kept = order.size();
  if (config.top_k > 0) n_kept = std::min(n_kept, static_cast<size_t>(config.top_k));
  if (config.top_p < 1.0f) {
    const float max_logit = logits[order[0]];
    double sum = 0.0;
    for (size_t pos = 0; pos < n_kept; ++pos) sum += std::exp(logits[order[pos]] - max_logit);
    double cumulative = 0.0;
    for (size_t pos = 0; pos < n_kept; ++pos) {
      cumulative += std::exp(logits[order[pos]] - max_logit) / sum;
      if (cumulative >= config.top_p) {
        n_kept = pos + 1;
        break;
      }
    }
  }
  if (config.min_p > 0.0f) {
    const float min_logit = logits[order[0]] + std::log(config.min_p);
    while (n_kept > 1 && logits[order[n_kept - 1]] < min_logit) --n_kept;
  }
  std::vector<double> probs(logits.size(), 0.0);
  double sum = 0.0;
  for (size_t pos = 0; pos < n_kept; ++pos) {
    const double weight =
        std::exp((double(logits[order[pos]]) - logits[order[0]]) / config.temperature);
    probs[order[pos]] = weight;
    sum += weight;
  }
  for (double& prob : probs) prob /= sum;
  return probs;
}

// Logits quantised to quarters so thousands of ties sit on every cut, exercising the tie rule
// inside partial_sort, nth_element and the growing top-p prefix.
std::vector<float> large_vocab_logits() {
  constexpr int kVocab = 150000;
  std::mt19937_64 engine(77);
  std::normal_distribution<double> normal(0.0, 2.0);
  std::vector<float> logits(kVocab);
  for (float& logit : logits) logit = static_cast<float>(std::round(normal(engine) * 4.0) / 4.0);
  return logits;
}

TEST(Sampler, LargeVocabularyMatchesAFullSortReference) {
  const std::vector<float> logits = large_vocab_logits();
  struct Case {
    const char* name;
    int top_k;
    float top_p;
    float min_p;
  };
  const std::vector<Case> cases = {
      {"defaults (heap top-k)", 40, 0.95f, 0.05f},
      {"nth_element top-k with ties", 1000, 1.0f, 0.0f},
      {"nth_element top-k then top-p", 5000, 0.5f, 0.0f},
      {"growing top-p prefix", 0, 0.9f, 0.0f},
      {"top-p reaching past 256", 0, 0.3f, 0.0f},
      {"min-p alone, unsorted", 0, 1.0f, 0.05f},
      {"top-p then min-p", 0, 0.99f, 0.01f},
  };
  std::vector<float> probs(logits.size());
  for (const auto& c : cases) {
    SamplerConfig config;
    config.temperature = 0.7f;
    config.top_k = c.top_k;
    config.top_p = c.top_p;
    config.min_p = c.min_p;
    Sampler sampler(config, static_cast<int>(logits.size()));
    sampler.distribution(logits, {}, probs);
    const std::vector<double> expected = reference_distribution(config, logits);
    size_t n_kept = 0, n_mismatch = 0;
    double total = 0.0;
    for (size_t token = 0; token < logits.size(); ++token) {
      const bool kept = expected[token] > 0.0;
      n_kept += kept;
      total += probs[token];
      if (kept != (probs[token] > 0.0f) ||
          std::abs(probs[token] - expected[token]) > 1e-6 + 1e-5 * expected[token]) {
        if (n_mismatch++ < 3) {
          ADD_FAILURE() << c.name << ": token " << token << " got " << probs[token] << ", expected "
                        << expected[token];
        }
      }
    }
    EXPECT_EQ(n_mismatch, 0u) << c.name;
    EXPECT_GT(n_kept, 1u) << c.name;  // a real cut, not a single token
    EXPECT_NEAR(total, 1.0, 1e-5) << c.name;
  }
}

}  // namespace
}  // namespace augur::sampling
