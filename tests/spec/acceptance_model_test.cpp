// The policy's acceptance model: per-position conditional rates from observed blocks, leaning on
// the position before when data is thin, forgetting on a surprising outcome, confidence bins.
#include "spec/acceptance_model.h"

#include <gtest/gtest.h>

#include <vector>

namespace augur::spec {
namespace {

TEST(AcceptanceModel, UnseenDrafterHasTheNeutralPriorAtEveryPosition) {
  const AcceptanceModel model(8);
  EXPECT_FALSE(model.tried());
  for (int i = 1; i <= 8; ++i) EXPECT_DOUBLE_EQ(model.rate(i), 0.5);
  EXPECT_DOUBLE_EQ(model.expected_accepted(2), 0.5 + 0.25);
}

TEST(AcceptanceModel, LearnsConditionalRatesPerPosition) {
  // Position 1 kept 90 % of the time, position 2 (when reached) 50 %.
  AcceptanceModel model(4);
  for (int block = 0; block < 400; ++block) {
    const bool first = block % 10 != 0;
    const bool second = first && block % 2 == 0;
    model.observe(2, first ? (second ? 2 : 1) : 0, {});
  }
  EXPECT_NEAR(model.rate(1), 0.9, 0.06);
  EXPECT_NEAR(model.rate(2), 0.5, 0.08);
  // Never drafted: leans on position 2.
  EXPECT_NEAR(model.rate(3), model.rate(2), 0.05);
  EXPECT_NEAR(model.expected_accepted(2), model.rate(1) * (1 + model.rate(2)), 1e-12);
  EXPECT_EQ(model.blocks(), 400);
}

TEST(AcceptanceModel, PositionsNotReachedTeachNothing) {
  AcceptanceModel model(4);
  // Every block of 4 rejects its first draft: positions 2..4 are never reached.
  for (int block = 0; block < 50; ++block) model.observe(4, 0, {});
  EXPECT_LT(model.rate(1), 0.05);
  // Their estimates lean on position 1 instead of a made-up 0 or 1.
  EXPECT_LT(model.rate(2), 0.1);
}

TEST(AcceptanceModel, ASurprisingRunOfKeptDraftsForgetsThePastQuickly) {
  AcceptanceModel model(8);
  for (int block = 0; block < 200; ++block) model.observe(2, block % 5 == 0 ? 1 : 0, {});
  EXPECT_LT(model.rate(1), 0.3);
  // The text turns repetitive: every draft of 8 is kept.
  for (int block = 0; block < 6; ++block) model.observe(8, 8, {});
  // A plain EWMA of weight 0.05 would be at 1 - 0.8 * 0.95^6 = 0.41 now.
  EXPECT_GT(model.rate(1), 0.6) << "six full blocks must outweigh the stale history";
}

TEST(AcceptanceModel, ConfidenceBinsSeparateSureFromUnsureTokens) {
  AcceptanceModel model(4);
  const std::vector<float> sure = {0.95f}, unsure = {0.2f};
  for (int block = 0; block < 300; ++block) {
    model.observe(1, 1, sure);    // sure tokens are kept
    model.observe(1, 0, unsure);  // unsure ones are not
  }
  EXPECT_TRUE(model.has_confidences());
  EXPECT_NEAR(model.rate(1), 0.5, 0.1);
  EXPECT_GT(model.rate_given(1, 0.95f), 0.85);
  EXPECT_LT(model.rate_given(1, 0.2f), 0.15);
  EXPECT_GT(model.confident_rate(1), 0.85);
  // An empty bin falls back to the position's rate.
  EXPECT_NEAR(model.rate_given(1, 0.6f), model.rate(1), 1e-12);
}

}  // namespace
}  // namespace augur::spec
