#include "engine/generator.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "spec/ngram_drafter.h"
#include "support/reference.h"
#include "support/scripted_model.h"
#include "test_paths.h"

namespace augur::engine {
namespace {

struct TinyLlama {
  TinyLlama() : model(model::load_model(testing::fixtures_dir() / "tiny-llama.gguf")), pool(2) {
    ref = testing::read_json(testing::fixtures_dir() / "tiny-llama.ref.json");
  }
  std::vector<int32_t> prompt(size_t p) const {
    return ref["prompts"][p].get<std::vector<int32_t>>();
  }
  std::vector<int32_t> greedy(size_t p) const {
    return ref["greedy"][p]["tokens"].get<std::vector<int32_t>>();
  }
  std::unique_ptr<model::Model> model;
  kernels::ThreadPool pool;
  nlohmann::json ref;
};

sampling::Sampler greedy_sampler(const model::Model& m) {
  sampling::SamplerConfig c;
  c.temperature = 0;
  return sampling::Sampler(c, static_cast<int>(m.hparams().n_vocab));
}

const EogPredicate kNoEog = [](int32_t) { return false; };

TEST(Generator, GreedyReproducesReferenceTokens) {
  TinyLlama t;
  Generator gen(*t.model, t.pool, 256, 512);
  sampling::SeededRng rng(1);
  GenerateOptions opt;
  const auto n_prompt = static_cast<int64_t>(t.prompt(2).size());
  opt.n_predict = static_cast<int>(t.greedy(2).size());
  const auto r = gen.generate(t.prompt(2), greedy_sampler(*t.model), rng, opt, kNoEog);
  EXPECT_EQ(r.tokens, t.greedy(2));
  EXPECT_EQ(r.stop, StopReason::Length);
  EXPECT_EQ(r.stats.n_prompt, n_prompt);
  EXPECT_EQ(r.stats.n_gen, opt.n_predict);
  EXPECT_GT(r.stats.prefill_s, 0);
  EXPECT_GT(r.stats.decode_s, 0);
  // A second call reuses the cached prompt (only its last token is evaluated again) and gives
  // the same tokens; so does a call after reset(), which evaluates the whole prompt.
  const auto again = gen.generate(t.prompt(2), greedy_sampler(*t.model), rng, opt, kNoEog);
  EXPECT_EQ(again.tokens, r.tokens);
  EXPECT_EQ(again.stats.n_prompt_evaluated, 1);
  gen.reset();
  const auto fresh = gen.generate(t.prompt(2), greedy_sampler(*t.model), rng, opt, kNoEog);
  EXPECT_EQ(fresh.tokens, r.tokens);
  EXPECT_EQ(fresh.stats.n_prompt_evaluated, n_prompt);
}

TEST(Generator, ReusesOnlyTheCommonPrefixOfADifferentPrompt) {
  TinyLlama t;
  Generator gen(*t.model, t.pool, 256, 512);
  sampling::SeededRng rng(1);
  GenerateOptions opt;
  opt.n_predict = 8;
  auto prompt = t.prompt(2);
  gen.generate(prompt, greedy_sampler(*t.model), rng, opt, kNoEog);
  prompt[20] = prompt[20] == 5 ? 6 : 5;
  const auto r = gen.generate(prompt, greedy_sampler(*t.model), rng, opt, kNoEog);
  EXPECT_EQ(r.stats.n_prompt_evaluated, static_cast<int64_t>(prompt.size()) - 20);
  Generator fresh(*t.model, t.pool, 256, 512);
  EXPECT_EQ(fresh.generate(prompt, greedy_sampler(*t.model), rng, opt, kNoEog).tokens, r.tokens);
}

TEST(Generator, StopsAtEndOfGenerationUnlessIgnored) {
  TinyLlama t;
  Generator gen(*t.model, t.pool, 256, 512);
  sampling::SeededRng rng(1);
  const auto expected = t.greedy(1);
  // The first greedy token that has not appeared before plays the end-of-generation token.
  size_t stop_at = 1;
  while (std::find(expected.begin(), expected.begin() + stop_at, expected[stop_at]) !=
         expected.begin() + stop_at)
    ++stop_at;
  const int32_t eog = expected[stop_at];
  GenerateOptions opt;
  opt.n_predict = static_cast<int>(expected.size());
  auto r = gen.generate(t.prompt(1), greedy_sampler(*t.model), rng, opt,
                        [&](int32_t x) { return x == eog; });
  EXPECT_EQ(r.stop, StopReason::EndOfGeneration);
  EXPECT_EQ(r.tokens, std::vector<int32_t>(expected.begin(), expected.begin() + stop_at));
  opt.ignore_eos = true;
  r = gen.generate(t.prompt(1), greedy_sampler(*t.model), rng, opt,
                   [&](int32_t x) { return x == eog; });
  EXPECT_EQ(r.tokens, expected);
}

TEST(Generator, CallbackCanCancel) {
  TinyLlama t;
  Generator gen(*t.model, t.pool, 256, 512);
  sampling::SeededRng rng(1);
  GenerateOptions opt;
  opt.n_predict = 48;
  int seen = 0;
  const auto r = gen.generate(t.prompt(3), greedy_sampler(*t.model), rng, opt, kNoEog,
                              [&](int32_t) { return ++seen < 3; });
  EXPECT_EQ(r.stop, StopReason::Cancelled);
  EXPECT_EQ(r.tokens.size(), 3u);
}

TEST(Generator, UnlimitedRunStopsWhenContextIsFull) {
  TinyLlama t;
  Generator gen(*t.model, t.pool, static_cast<int64_t>(t.prompt(2).size()) + 10, 512);
  sampling::SeededRng rng(1);
  GenerateOptions opt;
  opt.n_predict = -1;
  const auto r = gen.generate(t.prompt(2), greedy_sampler(*t.model), rng, opt, kNoEog);
  EXPECT_EQ(r.stop, StopReason::ContextFull);
  EXPECT_EQ(r.tokens.size(), 11u);  // the last token is generated but never fed back
}

TEST(Generator, RejectsEmptyOrOversizedPrompts) {
  TinyLlama t;
  // Room for prompt 2 and a few tokens, not for prompt 3 (longer) nor for 20 more tokens.
  const auto n_ctx = static_cast<int64_t>(t.prompt(2).size()) + 7;
  ASSERT_GT(static_cast<int64_t>(t.prompt(3).size()), n_ctx);
  Generator gen(*t.model, t.pool, n_ctx, 512);
  sampling::SeededRng rng(1);
  GenerateOptions opt;
  EXPECT_THROW(gen.generate({}, greedy_sampler(*t.model), rng, opt, kNoEog), InvalidArgument);
  EXPECT_THROW(gen.generate(t.prompt(3), greedy_sampler(*t.model), rng, opt, kNoEog),
               InvalidArgument);
  opt.n_predict = 20;  // prompt + 20 - 1 > n_ctx
  EXPECT_THROW(gen.generate(t.prompt(2), greedy_sampler(*t.model), rng, opt, kNoEog),
               InvalidArgument);
}

// The message of the InvalidArgument `call` throws; a failure if it throws nothing or another type.
template <typename Call>
std::string invalid_argument_message(Call call) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected InvalidArgument, nothing was thrown";
  return {};
}

// The sampler/model and drafter/option combinations generate() refuses, each with the value and
// what was allowed. (No sampler setting is refused for any drafter: every sampler config works
// with every drafter, greedy through the greedy lane, the rest through the sampled lane.)
TEST(Generator, RejectsASamplerForAnotherVocabularyAndADraftLengthOutOfRange) {
  const testing::ScriptedModel model(4, [](std::span<const int32_t>, std::span<float> out) {
    std::fill(out.begin(), out.end(), 0.0f);
  });
  kernels::ThreadPool pool(1);
  Generator gen(model, pool, 32, 8);
  sampling::SeededRng rng(1);
  const std::vector<int32_t> prompt = {1, 2};
  GenerateOptions opt;
  opt.n_predict = 4;

  sampling::SamplerConfig config;
  const sampling::Sampler five_tokens(config, 5);
  EXPECT_EQ(invalid_argument_message([&] { gen.generate(prompt, five_tokens, rng, opt, kNoEog); }),
            "sampler is for 5 tokens, the model has 4");

  const sampling::Sampler sampler(config, 4);
  spec::NgramDrafter drafter;
  opt.drafter = &drafter;
  for (const int k : {0, kMaxDraft + 1}) {
    opt.draft_max = k;
    EXPECT_EQ(invalid_argument_message([&] { gen.generate(prompt, sampler, rng, opt, kNoEog); }),
              "draft length " + std::to_string(k) + " is out of range: use 1..32");
  }
  // The bounds themselves are accepted; without a drafter draft_max is not looked at.
  for (const int k : {1, kMaxDraft}) {
    opt.draft_max = k;
    EXPECT_EQ(gen.generate(prompt, sampler, rng, opt, kNoEog).tokens.size(), 4u);
  }
  opt.drafter = nullptr;
  opt.draft_max = 0;
  EXPECT_EQ(gen.generate(prompt, sampler, rng, opt, kNoEog).tokens.size(), 4u);
}

TEST(Generator, SampledRunsAreReproducibleBySeed) {
  TinyLlama t;
  Generator gen(*t.model, t.pool, 256, 512);
  sampling::SamplerConfig c;
  c.temperature = 1.5f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0;
  const sampling::Sampler sampler(c, 512);
  GenerateOptions opt;
  opt.n_predict = 32;
  sampling::SeededRng a(42), b(42), other(43);
  const auto ra = gen.generate(t.prompt(2), sampler, a, opt, kNoEog);
  EXPECT_EQ(gen.generate(t.prompt(2), sampler, b, opt, kNoEog).tokens, ra.tokens);
  EXPECT_NE(gen.generate(t.prompt(2), sampler, other, opt, kNoEog).tokens, ra.tokens);
}

}  // namespace
}  // namespace augur::engine
