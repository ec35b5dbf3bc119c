// Each transform of the sampler alone on small hand-computed vectors, then their composition.
// Logits are written as log(weight) so the expected probabilities are plain fractions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error.h"
#include "sampling/sampler.h"
#include "scripted_rng.h"

namespace augur::sampling {
namespace {

using testing::ScriptedRng;

constexpr double kTol = 1e-6;
constexpr float kInf = std::numeric_limits<float>::infinity();

// Every transform off, temperature 1: the distribution is the plain softmax.
SamplerConfig plain() {
  SamplerConfig config;
  config.temperature = 1.0f;
  config.top_k = 0;
  config.top_p = 1.0f;
  config.min_p = 0.0f;
  config.repeat_penalty = 1.0f;
  return config;
}

std::vector<float> log_weights(const std::vector<double>& weights) {
  std::vector<float> logits;
  for (const double weight : weights) logits.push_back(static_cast<float>(std::log(weight)));
  return logits;
}

std::vector<float> distribution_of(const SamplerConfig& config, const std::vector<float>& logits,
                                   const std::vector<int32_t>& history = {}) {
  Sampler sampler(config, static_cast<int>(logits.size()));
  std::vector<float> probs(logits.size(), -1.0f);
  sampler.distribution(logits, history, probs);
  return probs;
}

void expect_probs(const std::vector<float>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t token = 0; token < actual.size(); ++token) {
    if (expected[token] == 0.0) {
      EXPECT_EQ(actual[token], 0.0f) << "token " << token << " should be cut";
    } else {
      EXPECT_NEAR(actual[token], expected[token], kTol) << "token " << token;
    }
  }
}

// softmax of raw logits, for expectations written in logit space.
std::vector<double> softmax(const std::vector<double>& logits) {
  double sum = 0.0;
  for (const double logit : logits) sum += std::exp(logit);
  std::vector<double> probs;
  for (const double logit : logits) probs.push_back(std::exp(logit) / sum);
  return probs;
}

const std::vector<double> kTenths = {1, 2, 3, 4};  // softmax of log: {.1, .2, .3, .4}

TEST(SamplerTransforms, NoTransformIsThePlainSoftmax) {
  expect_probs(distribution_of(plain(), log_weights(kTenths)), {0.1, 0.2, 0.3, 0.4});
}

TEST(SamplerTransforms, TopKKeepsTheKHighestLogits) {
  SamplerConfig config = plain();
  config.top_k = 2;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 0, 3.0 / 7, 4.0 / 7});
  config.top_k = 4;  // k >= n_vocab keeps everything
  expect_probs(distribution_of(config, log_weights(kTenths)), {0.1, 0.2, 0.3, 0.4});
}

TEST(SamplerTransforms, TopKTieAtTheBoundaryKeepsLowerTokenIds) {
  SamplerConfig config = plain();
  config.top_k = 2;
  expect_probs(distribution_of(config, {0.0f, 2.0f, 2.0f, 2.0f, 1.0f}), {0, 0.5, 0.5, 0, 0});
  config.top_k = 1;
  expect_probs(distribution_of(config, {0.0f, 2.0f, 2.0f, 2.0f, 1.0f}), {0, 1, 0, 0, 0});
}

// Sorted {.4, .3, .2, .1}: cumulative .4, .7, .9, 1.
TEST(SamplerTransforms, TopPKeepsTheShortestPrefixReachingP) {
  SamplerConfig config = plain();
  config.top_p = 0.65f;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 0, 3.0 / 7, 4.0 / 7});
  config.top_p = 0.75f;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 2.0 / 9, 3.0 / 9, 4.0 / 9});
  config.top_p = 0.35f;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 0, 0, 1});
}

// Four equal logits give exactly 0.25 each, so a cumulative sum of exactly 0.5 must count as
// reaching top_p = 0.5 (>=, as llama.cpp), and the tie keeps the lowest ids.
TEST(SamplerTransforms, TopPCountsExactMassAsReachedAndBreaksTiesByLowerId) {
  SamplerConfig config = plain();
  config.top_p = 0.5f;
  expect_probs(distribution_of(config, {1.0f, 1.0f, 1.0f, 1.0f}), {0.5, 0.5, 0, 0});
  config.top_p = 0.6f;
  expect_probs(distribution_of(config, {1.0f, 1.0f, 1.0f, 1.0f}), {1.0 / 3, 1.0 / 3, 1.0 / 3, 0});
}

TEST(SamplerTransforms, TopPAlwaysKeepsAtLeastTheTopToken) {
  SamplerConfig config = plain();
  config.top_p = 1e-6f;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 0, 0, 1});
}

// Max prob .4: min_p .6 -> threshold .24 keeps {.3, .4}; min_p .45 -> .18 keeps {.2, .3, .4}.
TEST(SamplerTransforms, MinPKeepsTokensAboveAFractionOfTheTopProbability) {
  SamplerConfig config = plain();
  config.min_p = 0.6f;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 0, 3.0 / 7, 4.0 / 7});
  config.min_p = 0.45f;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 2.0 / 9, 3.0 / 9, 4.0 / 9});
  config.min_p = 1.0f;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 0, 0, 1});
}

// Logits {0, ln 2, ln 4}: temperature 0.5 squares the weights, 2 takes their square roots.
TEST(SamplerTransforms, TemperatureSharpensBelowOneAndFlattensAboveOne) {
  SamplerConfig config = plain();
  config.temperature = 0.5f;
  expect_probs(distribution_of(config, log_weights({1, 2, 4})), {1.0 / 21, 4.0 / 21, 16.0 / 21});
  config.temperature = 2.0f;
  const double sum = 3.0 + std::sqrt(2.0);
  expect_probs(distribution_of(config, log_weights({1, 2, 4})),
               {1.0 / sum, std::sqrt(2.0) / sum, 2.0 / sum});
}

// top_p 0.5 on the untempered {.1,.2,.3,.4} keeps {.3,.4}; temperature 0.5 then gives
// {.09,.16}/.25. Tempering first would give {.01,.04,.09,.16}/.3, whose top token alone (.53)
// already reaches 0.5, so that order would keep only token 3.
TEST(SamplerTransforms, TruncationRunsBeforeTemperature) {
  SamplerConfig config = plain();
  config.top_p = 0.5f;
  config.temperature = 0.5f;
  expect_probs(distribution_of(config, log_weights(kTenths)), {0, 0, 0.36, 0.64});
}

// logits {3, 2, 1, .5, -1, 2.5}, history {0, 4, 0}, penalty 2:
//   penalised {1.5, 2, 1, .5, -2, 2.5} (token 0 divided once, token 4 multiplied);
//   top-k 4 keeps tokens 5, 1, 0, 2 (logits 2.5, 2, 1.5, 1);
//   top-p .85: their softmax is {.455, .276, .167, .102}, cumulative .455, .731, .898 -> 5, 1, 0;
//   min-p .5: exp(1.5 - 2.5) = .37 < .5 drops token 0, exp(-.5) = .61 keeps token 1;
//   temperature .5: logits 5 and 4 -> {1, e^-1} / (1 + e^-1).
TEST(SamplerTransforms, FullChainComposesInLlamaCppOrder) {
  SamplerConfig config;
  config.repeat_penalty = 2.0f;
  config.repeat_last_n = 64;
  config.top_k = 4;
  config.top_p = 0.85f;
  config.min_p = 0.5f;
  config.temperature = 0.5f;
  const double e = std::exp(-1.0);
  expect_probs(distribution_of(config, {3.0f, 2.0f, 1.0f, 0.5f, -1.0f, 2.5f}, {0, 4, 0}),
               {0, e / (1 + e), 0, 0, 0, 1 / (1 + e)});
}

TEST(SamplerTransforms, RepeatPenaltyDividesPositiveAndMultipliesNonPositiveLogits) {
  SamplerConfig config = plain();
  config.repeat_penalty = 2.0f;
  // tokens 0 (logit 2), 1 (-2) and 3 (0) were seen -> {1, -4, 1, 0}
  expect_probs(distribution_of(config, {2.0f, -2.0f, 1.0f, 0.0f}, {0, 1, 3}),
               softmax({1.0, -4.0, 1.0, 0.0}));
  // a penalty below 1 rewards repetition by the same rule -> {4, -1, 1, 0}
  config.repeat_penalty = 0.5f;
  expect_probs(distribution_of(config, {2.0f, -2.0f, 1.0f, 0.0f}, {0, 1, 3}),
               softmax({4.0, -1.0, 1.0, 0.0}));
}

TEST(SamplerTransforms, RepeatPenaltyHitsEachDistinctTokenOnce) {
  SamplerConfig config = plain();
  config.repeat_penalty = 2.0f;
  // token 0 three times is still divided once: 4 -> 2, not 0.5
  expect_probs(distribution_of(config, {4.0f, 1.0f}, {0, 0, 0}), softmax({2.0, 1.0}));
}

TEST(SamplerTransforms, RepeatPenaltyLooksOnlyAtTheLastNTokens) {
  SamplerConfig config = plain();
  config.repeat_penalty = 2.0f;
  const std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.0f};
  const std::vector<int32_t> history = {0, 1, 2};
  config.repeat_last_n = 2;  // window {1, 2}
  expect_probs(distribution_of(config, logits, history), softmax({2.0, -4.0, 0.5, 0.0}));
  config.repeat_last_n = 1;  // window {2}
  expect_probs(distribution_of(config, logits, history), softmax({2.0, -2.0, 0.5, 0.0}));
  config.repeat_last_n = 10;  // longer than the history: all of it
  expect_probs(distribution_of(config, logits, history), softmax({1.0, -4.0, 0.5, 0.0}));
  config.repeat_last_n = -1;  // the whole history
  expect_probs(distribution_of(config, logits, history), softmax({1.0, -4.0, 0.5, 0.0}));
  config.repeat_last_n = 0;  // disabled
  expect_probs(distribution_of(config, logits, history), softmax({2.0, -2.0, 1.0, 0.0}));
}

// llama.cpp's penalties sampler: repeat first, then count x frequency + presence subtracted.
TEST(SamplerTransforms, FrequencyAndPresencePenaltiesCountOccurrencesInTheWindow) {
  SamplerConfig config = plain();
  config.frequency_penalty = 0.5f;
  config.presence_penalty = 0.25f;
  // token 0 seen 3 times: 4 - 1.5 - .25; token 2 once: 1 - .5 - .25; token 1 unseen.
  expect_probs(distribution_of(config, {4.0f, 1.0f, 1.0f}, {0, 2, 0, 0}),
               softmax({2.25, 1.0, 0.25}));
  config.repeat_penalty = 2.0f;  // 4 / 2 = 2, then - 1.75; 1 / 2 = .5, then - .75
  expect_probs(distribution_of(config, {4.0f, 1.0f, 1.0f}, {0, 2, 0, 0}),
               softmax({0.25, 1.0, -0.25}));
  config.repeat_last_n = 2;  // window {0, 0}: token 0 twice, token 2 unseen
  expect_probs(distribution_of(config, {4.0f, 1.0f, 1.0f}, {0, 2, 0, 0}),
               softmax({0.75, 1.0, 1.0}));
  // Negative values reward repetition; the sampler keeps no counts between calls.
  config = plain();
  config.presence_penalty = -1.0f;
  expect_probs(distribution_of(config, {0.0f, 0.0f}, {1, 1}), softmax({0.0, 1.0}));
  expect_probs(distribution_of(config, {0.0f, 0.0f}, {1, 1}), softmax({0.0, 1.0}));
  config.frequency_penalty = std::numeric_limits<float>::infinity();
  EXPECT_THROW(config.validate(), InvalidArgument);
}

TEST(SamplerTransforms, RepeatPenaltyRejectsAHistoryTokenOutsideTheVocabulary) {
  SamplerConfig config = plain();
  config.repeat_penalty = 1.1f;
  Sampler sampler(config, 4);
  std::vector<float> probs(4);
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 3.0f};
  try {
    sampler.distribution(logits, std::vector<int32_t>{1, 4}, probs);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("history token 4"), std::string::npos) << error.what();
  }
  // The failed call left no state behind: token 1 is penalised exactly once next time.
  sampler.distribution(logits, std::vector<int32_t>{1}, probs);
  expect_probs(probs, softmax({0.0, 1.0 / 1.1f, 2.0, 3.0}));
}

TEST(SamplerTransforms, NegativeInfinityLogitsGetZeroProbability) {
  SamplerConfig config = plain();
  config.top_k = 3;  // more than the two finite logits
  expect_probs(distribution_of(config, {-kInf, 0.0f, -kInf, 0.0f}), {0, 0.5, 0, 0.5});
}

TEST(SamplerTransforms, RejectsNanOrPositiveInfinityAndAllNegativeInfinity) {
  EXPECT_THROW(distribution_of(plain(), {0.0f, std::nanf("")}), Error);
  EXPECT_THROW(distribution_of(plain(), {0.0f, kInf}), Error);
  EXPECT_THROW(distribution_of(plain(), {-kInf, -kInf}), Error);
}

TEST(SamplerGreedy, IsOneHotOnTheArgmaxOfPenalisedLogits) {
  SamplerConfig config;
  config.temperature = 0.0f;
  EXPECT_TRUE(Sampler(config, 2).greedy());
  expect_probs(distribution_of(config, {5.0f, 4.0f}), {1, 0});
  config.repeat_penalty = 2.0f;  // token 0 seen: 5 -> 2.5 < 4
  expect_probs(distribution_of(config, {5.0f, 4.0f}, {0}), {0, 1});
}

TEST(SamplerGreedy, TieGoesToTheLowestIndex) {
  SamplerConfig config;
  config.temperature = 0.0f;
  expect_probs(distribution_of(config, {1.0f, 3.0f, 3.0f, 2.0f}), {0, 1, 0, 0});
}

TEST(SamplerGreedy, SampleReturnsArgmaxWithoutConsumingAUniform) {
  SamplerConfig config;
  config.temperature = 0.0f;
  Sampler sampler(config, 4);
  ScriptedRng rng({});
  std::vector<float> probs(4, -1.0f);
  EXPECT_EQ(sampler.sample(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}, {}, rng, probs), 1);
  EXPECT_EQ(rng.n_used(), 0u);
  expect_probs(probs, {0, 1, 0, 0});
}

}  // namespace
}  // namespace augur::sampling
