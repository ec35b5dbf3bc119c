// Stop conditions under speculative decoding: a cycle commits several tokens at once, yet
// generation stops exactly where AR stops (end of generation, n tokens, full context, caller's
// cancel), with the same tokens.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "support/spec_setup.h"

namespace augur::engine {
namespace {

struct Zoo {
  Zoo()
      : target(model::load_model(testing::models_dir() / "zoo-target-q8_0.gguf")),
        pool(2),
        prompt(testing::zoo_prompts(*target, 1)[0]),
        sampler(testing::make_sampler(*target, 0.0f)) {}
  std::unique_ptr<model::Model> target;
  kernels::ThreadPool pool;
  std::vector<int32_t> prompt;
  sampling::Sampler sampler;

  GenerateResult run(spec::DraftSource* drafter, GenerateOptions opt, int64_t n_ctx,
                     const EogPredicate& eog = testing::kNeverEog,
                     const TokenCallback& on_token = {}) {
    Generator gen(*target, pool, n_ctx, 16);
    opt.drafter = drafter;
    sampling::SeededRng rng(3);
    return gen.generate(prompt, sampler, rng, opt, eog, on_token);
  }
};

TEST(SpecStop, EndOfGenerationInsideACycleStopsWhereArStops) {
  Zoo z;
  spec::NgramDrafter ngram;
  GenerateOptions opt;
  opt.n_predict = 64;
  opt.ignore_eos = true;
  opt.draft_max = 8;
  const auto ar = z.run(nullptr, opt, 256).tokens;
  // A token first generated late plays end-of-generation.
  size_t at = ar.size() / 2;
  while (std::find(ar.begin(), ar.begin() + static_cast<long>(at), ar[at]) !=
         ar.begin() + static_cast<long>(at))
    ++at;
  ASSERT_LT(at, ar.size());
  const int32_t eog_token = ar[at];
  opt.ignore_eos = false;
  const auto eog = [eog_token](int32_t t) { return t == eog_token; };
  const auto want = z.run(nullptr, opt, 256, eog);
  const auto got = z.run(&ngram, opt, 256, eog);
  EXPECT_EQ(want.stop, StopReason::EndOfGeneration);
  EXPECT_EQ(got.stop, StopReason::EndOfGeneration);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.tokens.size(), at);
  EXPECT_GT(got.stats.spec.accepted, 0);
}

TEST(SpecStop, FullContextStopsWhereArStops) {
  Zoo z;
  spec::NgramDrafter ngram;
  GenerateOptions opt;
  opt.n_predict = -1;
  opt.ignore_eos = true;
  opt.draft_max = 16;
  const int64_t n_ctx = static_cast<int64_t>(z.prompt.size()) + 50;
  const auto want = z.run(nullptr, opt, n_ctx);
  const auto got = z.run(&ngram, opt, n_ctx);
  EXPECT_EQ(want.stop, StopReason::ContextFull);
  EXPECT_EQ(got.stop, StopReason::ContextFull);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(static_cast<int64_t>(got.tokens.size()),
            n_ctx - static_cast<int64_t>(z.prompt.size()) + 1);
}

TEST(SpecStop, ExactlyNTokensAndCancelMidCycle) {
  Zoo z;
  spec::NgramDrafter ngram;
  GenerateOptions opt;
  opt.ignore_eos = true;
  opt.draft_max = 8;
  for (int n : {1, 2, 7, 33}) {
    opt.n_predict = n;
    const auto got = z.run(&ngram, opt, 256);
    EXPECT_EQ(static_cast<int>(got.tokens.size()), n);
    EXPECT_EQ(got.stop, StopReason::Length);
  }
  opt.n_predict = 64;
  int seen = 0;
  const auto got =
      z.run(&ngram, opt, 256, testing::kNeverEog, [&](int32_t) { return ++seen < 21; });
  EXPECT_EQ(got.stop, StopReason::Cancelled);
  EXPECT_EQ(got.tokens.size(), 21u);
  const auto ar = z.run(nullptr, opt, 256).tokens;
  EXPECT_EQ(got.tokens, std::vector<int32_t>(ar.begin(), ar.begin() + 21));
}

TEST(SpecStop, DraftLengthOutOfRangeIsAnInvalidArgument) {
  Zoo z;
  spec::NgramDrafter ngram;
  GenerateOptions opt;
  for (int k : {0, -1, kMaxDraft + 1}) {
    opt.draft_max = k;
    EXPECT_THROW(z.run(&ngram, opt, 256), InvalidArgument) << k;
  }
}

}  // namespace
}  // namespace augur::engine
