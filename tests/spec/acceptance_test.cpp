// Acceptor: the uniforms each lane consumes, the edge cases of the sampled rule, and greedy
// acceptance against AR greedy decoding. The exact law is proved in acceptance_exact_law_test
// (the rule alone) and tests/engine/spec_exact_law_test (through the generation loop).
#include "spec/acceptance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "sampling/scripted_rng.h"
#include "support/planted_acceptors.h"

namespace augur::spec {
namespace {

using sampling::testing::ScriptedRng;

// Records what the lane asks for and answers from a fixed script: each bernoulli from `accepts`,
// each categorical with the argmax of its weights. A bare uniform() is a failure.
class RecordingRng final : public sampling::Rng {
 public:
  explicit RecordingRng(std::vector<bool> accepts) : accepts_(std::move(accepts)) {}
  double uniform() override {
    ADD_FAILURE() << "the sampled lane draws through bernoulli and categorical only";
    return 0.0;
  }
  bool bernoulli(double prob) override {
    probs.push_back(prob);
    if (probs.size() > accepts_.size()) {
      ADD_FAILURE() << "more accept tests than scripted";
      return false;
    }
    return accepts_[probs.size() - 1];
  }
  int32_t categorical(std::span<const float>) override {
    ADD_FAILURE() << "the sampled lane draws from double rows";
    return 0;
  }
  int32_t categorical(std::span<const double> weights) override {
    drawn.assign(weights.begin(), weights.end());
    ++n_draws;
    return sampling::argmax(std::vector<float>(weights.begin(), weights.end()));
  }
  std::vector<double> probs;
  std::vector<double> drawn;  // the weights of the last draw
  int n_draws = 0;

 private:
  std::vector<bool> accepts_;
};

std::vector<float> rows(std::initializer_list<std::initializer_list<float>> values) {
  std::vector<float> flat;
  for (const auto& row : values) flat.insert(flat.end(), row.begin(), row.end());
  return flat;
}

// Vocabulary 3, k = 3, drafts {0, 1, 2}; p(d) / q(d) = 0.5 at every position.
struct ThreeDrafts {
  std::vector<int32_t> draft = {0, 1, 2};
  std::vector<float> q = rows({{0.8f, 0.1f, 0.1f}, {0.1f, 0.8f, 0.1f}, {0.1f, 0.1f, 0.8f}});
  std::vector<float> p =
      rows({{0.4f, 0.3f, 0.3f}, {0.3f, 0.4f, 0.3f}, {0.3f, 0.3f, 0.4f}, {0.2f, 0.2f, 0.6f}});
};

TEST(SampledAcceptance, ConsumesOneUniformPerTestedDraftPlusOneForTheLastToken) {
  const ThreeDrafts c;
  Acceptor acceptor(3, SampledRule::kToken);
  {
    ScriptedRng rng({0.1, 0.2, 0.3, 0.9});  // three accepts, then the bonus from p3
    const AcceptanceResult result = acceptor.sampled(c.draft, c.q, c.p, rng);
    EXPECT_EQ(result.n_accepted, 3);
    EXPECT_EQ(result.next_token, 2);
    EXPECT_EQ(rng.n_used(), 4u);
  }
  {
    ScriptedRng rng({0.1, 0.5, 0.0});  // accept, reject at the second (0.5 is not < 0.5)
    const AcceptanceResult result = acceptor.sampled(c.draft, c.q, c.p, rng);
    EXPECT_EQ(result.n_accepted, 1);
    // residual max(0, p1 - q2) = {0.2, 0, 0.2}: u = 0 gives token 0
    EXPECT_EQ(result.next_token, 0);
    EXPECT_EQ(rng.n_used(), 3u);
  }
}

// The block rule on the same drafts: w = 1, 0.5, 0.25, 0.125; h_2 = 0 (0.25 p_2 < q_3
// everywhere), h_1 = m_1 / (m_1 + 1 - w_1) = 0.1 / 0.6 with m_1 = sum max(0, 0.5 p_1 - q_2) = 0.1.
// Tested from the top: w_3, then h_2, then h_1, one uniform each until one succeeds.
TEST(SampledAcceptance, BlockRuleTestsTheWholeBlockFirstThenShorterPrefixes) {
  const ThreeDrafts c;
  Acceptor acceptor(3, SampledRule::kBlock);
  {
    ScriptedRng rng({0.1, 0.9});  // 0.1 < w_3 = 0.125: the whole block, then the bonus from p3
    const AcceptanceResult result = acceptor.sampled(c.draft, c.q, c.p, rng);
    EXPECT_EQ(result.n_accepted, 3);
    EXPECT_EQ(result.next_token, 2);
    EXPECT_EQ(rng.n_used(), 2u);
  }
  {
    // 0.13 >= w_3; h_2 = 0 never succeeds; 0.16 < 1/6 keeps d_1; the residual
    // max(0, 0.5 p_1 - q_2) = {0.05, 0, 0.05}: u = 0.5 lands on token 2.
    ScriptedRng rng({0.13, 0.0, 0.16, 0.5});
    const AcceptanceResult result = acceptor.sampled(c.draft, c.q, c.p, rng);
    EXPECT_EQ(result.n_accepted, 1);
    EXPECT_EQ(result.next_token, 2);
    EXPECT_EQ(rng.n_used(), 4u);
  }
  {
    // 0.17 >= 1/6 as well: nothing kept, the residual max(0, p_0 - q_1) = {0, 0.2, 0.2}.
    ScriptedRng rng({0.5, 0.5, 0.17, 0.0});
    const AcceptanceResult result = acceptor.sampled(c.draft, c.q, c.p, rng);
    EXPECT_EQ(result.n_accepted, 0);
    EXPECT_EQ(result.next_token, 1);
    EXPECT_EQ(rng.n_used(), 4u);
  }
}

TEST(SampledAcceptance, KZeroIsPlainSamplingFromTheFirstRow) {
  Acceptor acceptor(3, SampledRule::kToken);
  ScriptedRng rng({0.95});
  const std::vector<float> p = {0.5f, 0.0f, 0.5f};
  const AcceptanceResult result = acceptor.sampled({}, {}, p, rng);
  EXPECT_EQ(result.n_accepted, 0);
  EXPECT_EQ(result.next_token, 2);
  EXPECT_EQ(rng.n_used(), 1u);
}

TEST(SampledAcceptance, TokenTheTargetForbidsIsNeverAcceptedEvenAtUZero) {
  Acceptor acceptor(3, SampledRule::kToken);
  const std::vector<int32_t> draft = {1};
  const std::vector<float> q = {0.2f, 0.6f, 0.2f};
  const std::vector<float> p = rows({{0.5f, 0.0f, 0.5f}, {1.0f, 0.0f, 0.0f}});
  RecordingRng recorder({false});
  const AcceptanceResult result = acceptor.sampled(draft, q, p, recorder);
  ASSERT_EQ(recorder.probs.size(), 1u);
  EXPECT_EQ(recorder.probs[0], 0.0);
  EXPECT_EQ(result.n_accepted, 0);
  EXPECT_EQ(recorder.drawn[1], 0.0) << "the forbidden token has no residual mass";
  ScriptedRng rng({0.0, 0.0});
  EXPECT_EQ(acceptor.sampled(draft, q, p, rng).n_accepted, 0);
}

TEST(SampledAcceptance, TokenTheDrafterGaveNoMassIsAcceptedWhenTheTargetAllowsIt) {
  Acceptor acceptor(3, SampledRule::kToken);
  const std::vector<int32_t> draft = {1};
  const std::vector<float> q = {0.5f, 0.0f, 0.5f};
  const std::vector<float> p = rows({{0.4f, 0.2f, 0.4f}, {1.0f, 0.0f, 0.0f}});
  RecordingRng recorder({true});
  const AcceptanceResult result = acceptor.sampled(draft, q, p, recorder);
  EXPECT_EQ(recorder.probs.at(0), 1.0) << "min(1, p / 0) = 1";
  EXPECT_EQ(result.n_accepted, 1);

  // Both zero: the target forbids it, so it is rejected.
  const std::vector<float> p_forbids = rows({{0.5f, 0.0f, 0.5f}, {1.0f, 0.0f, 0.0f}});
  RecordingRng forbid({false});
  (void)acceptor.sampled(draft, q, p_forbids, forbid);
  EXPECT_EQ(forbid.probs.at(0), 0.0);
}

TEST(SampledAcceptance, AllZeroResidualFallsBackToTheTargetRow) {
  Acceptor acceptor(4, SampledRule::kToken);
  const std::vector<int32_t> draft = {2};
  const std::vector<float> q = {0.1f, 0.2f, 0.3f, 0.4f};
  const std::vector<float> p = rows({{0.1f, 0.2f, 0.3f, 0.4f}, {1.0f, 0.0f, 0.0f, 0.0f}});
  RecordingRng recorder({false});  // force the probability-0 rejection
  const AcceptanceResult result = acceptor.sampled(draft, q, p, recorder);
  EXPECT_EQ(recorder.probs.at(0), 1.0) << "p = q: the ratio is exactly 1";
  EXPECT_EQ(result.n_accepted, 0);
  ASSERT_EQ(recorder.drawn.size(), 4u);
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(recorder.drawn[t], double(p[t])) << "token " << t;

  // With an Rng the rejection cannot happen: u < 1 always accepts.
  ScriptedRng rng({std::nextafter(1.0, 0.0), 0.0});
  EXPECT_EQ(acceptor.sampled(draft, q, p, rng).n_accepted, 1);
}

TEST(SampledAcceptance, OneHotRejectionDrawsFromTheTargetWithoutTheRejectedToken) {
  Acceptor acceptor(4, SampledRule::kToken);
  const std::vector<int32_t> draft = {1, 3};
  const std::vector<float> p =
      rows({{0.1f, 0.2f, 0.3f, 0.4f}, {0.25f, 0.25f, 0.25f, 0.25f}, {0.0f, 0.0f, 1.0f, 0.0f}});
  RecordingRng recorder({false});
  const AcceptanceResult result = acceptor.sampled(draft, {}, p, recorder);
  EXPECT_NEAR(recorder.probs.at(0), 0.2, 1e-7) << "one-hot q: the ratio is p(d)";
  EXPECT_EQ(result.n_accepted, 0);
  const std::vector<double> expected = {0.1, 0.0, 0.3, 0.4};
  for (size_t t = 0; t < 4; ++t) EXPECT_NEAR(recorder.drawn.at(t), expected[t], 1e-7);
}

// Scaling by powers of two is exact in float, so the normalised rows are bitwise the same.
TEST(SampledAcceptance, RowsAreNormalisedByTheirSums) {
  const ThreeDrafts c;
  std::vector<float> p_scaled = c.p;
  std::vector<float> q_scaled = c.q;
  for (float& value : p_scaled) value *= 4.0f;
  for (float& value : q_scaled) value *= 0.25f;
  Acceptor acceptor(3, SampledRule::kToken);
  RecordingRng plain({true, false});
  RecordingRng scaled({true, false});
  (void)acceptor.sampled(c.draft, c.q, c.p, plain);
  (void)acceptor.sampled(c.draft, q_scaled, p_scaled, scaled);
  ASSERT_EQ(plain.probs.size(), 2u);
  ASSERT_EQ(scaled.probs.size(), 2u);
  for (size_t pos = 0; pos < 2; ++pos) EXPECT_EQ(plain.probs[pos], scaled.probs[pos]);
  for (size_t t = 0; t < 3; ++t) EXPECT_EQ(plain.drawn[t], scaled.drawn[t]);
}

TEST(Acceptor, RejectsANonPositiveVocabulary) {
  EXPECT_THROW(Acceptor(0), InvalidArgument);
}

TEST(AcceptorDeathTest, ShapeMismatchIsAProgrammerError) {
  Acceptor acceptor(3, SampledRule::kToken);
  const std::vector<int32_t> draft = {0, 1};
  const std::vector<float> p(3 * 2);  // one row short
  EXPECT_DEATH((void)acceptor.greedy(draft, p), "p must hold k \\+ 1 rows");
}

// Greedy lane against AR greedy decoding (the greedy Sampler), on random synthetic targets whose
// logits are small integers, so ties are frequent and the lowest index must win them.
struct GreedyCase {
  int n_vocab;
  std::vector<float> table;  // [n_vocab + 1 (previous token, n_vocab = start), n_vocab]
  std::span<const float> logits(std::span<const int32_t> context) const {
    const size_t prev = context.empty() ? n_vocab : context.back();
    return std::span<const float>(table).subspan(prev * n_vocab, n_vocab);
  }
};

enum class GreedyRows { OneHotWithPenalty, RawLogits };

// Runs speculative greedy over `n_tokens` and returns the committed tokens.
std::vector<int32_t> speculative_greedy(const GreedyCase& c, const Acceptor& acceptor,
                                        const sampling::Sampler& sampler, GreedyRows kind,
                                        size_t n_tokens, sampling::SeededRng& rng) {
  const size_t vocab = c.n_vocab;
  std::vector<int32_t> committed;
  std::vector<int32_t> draft;
  std::vector<float> p;
  std::vector<float> best_row(vocab);
  while (committed.size() < n_tokens) {
    const int k = static_cast<int>(rng.uniform() * 6);  // 0..5
    draft.clear();
    std::vector<int32_t> history = committed;
    p.assign((k + 1) * vocab, 0.0f);
    for (int row = 0; row <= k; ++row) {
      const std::span<float> p_row(p.data() + row * vocab, vocab);
      if (kind == GreedyRows::OneHotWithPenalty) {
        sampler.distribution(c.logits(history), history, p_row);
      } else {
        std::copy_n(c.logits(history).begin(), vocab, p_row.begin());
      }
      if (row == k) break;
      // A drafter right about 60% of the time, otherwise a random token.
      sampler.distribution(c.logits(history), history, best_row);
      const int32_t token = rng.uniform() < 0.6 ? sampling::argmax(best_row)
                                                : static_cast<int32_t>(rng.uniform() * vocab);
      draft.push_back(token);
      history.push_back(token);
    }
    const AcceptanceResult result = acceptor.greedy(draft, p);
    committed.insert(committed.end(), draft.begin(), draft.begin() + result.n_accepted);
    committed.push_back(result.next_token);
  }
  committed.resize(n_tokens);
  return committed;
}

// Counts the cases whose speculative greedy stream differs from AR greedy.
// `defective`: run an acceptor with a planted defect instead of the production one.
int greedy_mismatches(bool defective) {
  sampling::SeededRng rng(2024);
  int mismatches = 0;
  constexpr size_t kTokens = 24;
  for (int case_index = 0; case_index < 300; ++case_index) {
    GreedyCase c;
    c.n_vocab = 2 + static_cast<int>(rng.uniform() * 7);  // 2..8
    c.table.resize(static_cast<size_t>(c.n_vocab + 1) * c.n_vocab);
    for (float& logit : c.table) logit = static_cast<float>(static_cast<int>(rng.uniform() * 3));
    const GreedyRows kind = case_index % 2 ? GreedyRows::RawLogits : GreedyRows::OneHotWithPenalty;
    sampling::SamplerConfig config;
    config.temperature = 0.0f;
    config.repeat_penalty = kind == GreedyRows::RawLogits ? 1.0f : 1.3f;
    config.repeat_last_n = 4;
    const sampling::Sampler sampler(config, c.n_vocab);
    const Acceptor plain(c.n_vocab);
    const testing::AcceptedCountOffByOneAcceptor off_by_one(c.n_vocab);
    const Acceptor& acceptor = defective ? off_by_one : plain;

    std::vector<int32_t> ar;
    while (ar.size() < kTokens) ar.push_back(sampler.sample(c.logits(ar), ar, rng));
    const std::vector<int32_t> spec = speculative_greedy(c, acceptor, sampler, kind, kTokens, rng);
    if (spec != ar) ++mismatches;
    if (!defective) {
      EXPECT_EQ(spec, ar) << "case " << case_index << " n_vocab " << c.n_vocab;
    }
  }
  return mismatches;
}

TEST(GreedyAcceptance, EqualsArGreedyOnRandomCasesWithTies) {
  EXPECT_EQ(greedy_mismatches(false), 0);
}

TEST(GreedyAcceptance, PlantedCountOffByOneIsCaught) {
  EXPECT_GT(greedy_mismatches(true), 0);
}

TEST(GreedyAcceptance, AcceptsWhileDraftIsArgmaxThenTakesTheLowestIndexOnATie) {
  Acceptor acceptor(3, SampledRule::kToken);
  const std::vector<int32_t> draft = {1, 0, 2};
  const std::vector<float> p = rows({{0.0f, 5.0f, 1.0f},    // argmax 1: accept
                                     {2.0f, 2.0f, 1.0f},    // tie 0/1 -> 0: accept
                                     {3.0f, 1.0f, 3.0f},    // tie 0/2 -> 0: reject 2, next 0
                                     {9.0f, 9.0f, 9.0f}});  // bonus row, unused
  const AcceptanceResult result = acceptor.greedy(draft, p);
  EXPECT_EQ(result.n_accepted, 2);
  EXPECT_EQ(result.next_token, 0);
  const std::vector<int32_t> all_right = {1, 0, 0};
  const AcceptanceResult bonus = acceptor.greedy(all_right, p);
  EXPECT_EQ(bonus.n_accepted, 3);
  EXPECT_EQ(bonus.next_token, 0) << "the bonus is the argmax of p_k, lowest index on a tie";
}

}  // namespace
}  // namespace augur::spec
