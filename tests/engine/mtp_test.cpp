// `--draft mtp`: a target's own MTP / NextN layer (model/heads/nextn.h) drafting through the
// pair-head drafter. Targets are real models with an echo MTP block appended
// (support/mtp_targets.h): tiny-qwen3 (q/k norms, NeoX RoPE) and zoo-target (llama).
//  - The trunk does not change: a model with the extra block computes bitwise the same logits.
//  - Greedy speculative output equals AR for 256 tokens at k in {1, 4, 8}, alone and under the
//    auto policy, also with a repetition penalty and a quantized cache.
//  - Refusals: a target without a NextN layer.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "common/error.h"
#include "engine/generator.h"
#include "model/evaluator.h"
#include "model/heads/nextn.h"
#include "spec/auto_sources.h"
#include "spec/pair_head_drafter.h"
#include "support/mtp_targets.h"
#include "support/requested_isa.h"
#include "support/run_command.h"
#include "support/sanitized_build.h"
#include "support/spec_setup.h"

namespace augur::engine {
namespace {

// A copy of `model` (under the shared dir) with an echo MTP layer, made once per process.
std::filesystem::path with_mtp(const std::string& model) {
  static std::map<std::string, std::filesystem::path> made;
  auto& path = made[model];
  if (path.empty()) {
    path = testing::temp_path("mtp-" + std::filesystem::path(model).filename().string());
    testing::write_target_with_echo_mtp(testing::shared_dir() / model, path);
  }
  return path;
}

class Mtp : public ::testing::Test {
 protected:
  void SetUp() override { AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE(); }
  static void TearDownTestSuite() {
    for (const char* m : {"fixtures/tiny-qwen3.gguf", "models/zoo-target-f16.gguf",
                          "models/zoo-target-q8_0.gguf"}) {
      std::filesystem::remove(with_mtp(m));
    }
  }
};

TEST_F(Mtp, TheTrunkComputesTheSameLogits) {
  kernels::ThreadPool pool(2);
  for (const char* m : {"fixtures/tiny-qwen3.gguf", "models/zoo-target-f16.gguf"}) {
    const auto plain = model::load_model(testing::shared_dir() / m);
    const auto extended = model::load_model(with_mtp(m));
    EXPECT_EQ(plain->hparams().n_nextn, 0);
    EXPECT_EQ(extended->hparams().n_nextn, 1);
    EXPECT_EQ(extended->hparams().n_layer, plain->hparams().n_layer);
    const std::vector<int32_t> prompt = {1, 20, 31, 44, 57, 61, 70, 83, 91, 99};
    const auto V = static_cast<size_t>(plain->hparams().n_vocab);
    std::vector<float> a(V), b(V);
    cache::ModelCache ca(*plain, {.capacity = 32, .max_batch = 16});
    cache::ModelCache cb(*extended, {.capacity = 32, .max_batch = 16});
    model::Evaluator(*plain, pool, 16, 32).forward_last(prompt, ca.memory(), a.data());
    model::Evaluator(*extended, pool, 16, 32).forward_last(prompt, cb.memory(), b.data());
    EXPECT_EQ(a, b) << m;
  }
}

// Tokens per greedy run (fewer under a sanitizer, several times slower).
constexpr int kGenerated = testing::full_or_sanitized(256, 96);

struct MtpRun {
  std::vector<int32_t> tokens;
  int64_t drafted = 0, accepted = 0;
};

MtpRun generate(const model::Model& target, spec::DraftSource* drafter, int k, float penalty,
                cache::CacheTypes types, kernels::ThreadPool& pool) {
  const auto prompt = testing::zoo_prompts(target, 1).front();
  const int n_gen = kGenerated;
  const int64_t n_ctx = static_cast<int64_t>(prompt.size()) + n_gen + 32;
  Generator gen(target, pool, n_ctx, 16, types);
  const auto sampler = testing::make_sampler(target, 0.0f, penalty);
  sampling::SeededRng rng(1);
  GenerateOptions opt;
  opt.n_predict = n_gen;
  opt.ignore_eos = true;
  opt.drafter = drafter;
  opt.draft_max = k;
  const auto r = gen.generate(prompt, sampler, rng, opt, testing::kNeverEog);
  return {r.tokens, r.stats.spec.drafted, r.stats.spec.accepted};
}

TEST_F(Mtp, GreedySpeculativeTokensEqualArTokens) {
  kernels::ThreadPool pool(2);
  struct Case {
    const char* model;
    float penalty;
    const char* cache;
  };
  for (const Case c : {Case{"fixtures/tiny-qwen3.gguf", 1.0f, "f32"},
                       Case{"models/zoo-target-f16.gguf", 1.0f, "f32"},
                       Case{"models/zoo-target-q8_0.gguf", 1.3f, "q8_0"}}) {
    const auto target = model::load_model(with_mtp(c.model));
    const auto head = model::heads::NextN::load(*target);
    const auto type = cache::parse_cache_type(c.cache);
    const cache::CacheTypes types{type, type};
    const MtpRun ar = generate(*target, nullptr, 0, c.penalty, types, pool);
    ASSERT_EQ(static_cast<int>(ar.tokens.size()), kGenerated);
    const int64_t n_ctx = static_cast<int64_t>(ar.tokens.size()) + 512;
    spec::PairHeadDrafter alone(*head, pool, n_ctx, 16, types);
    auto automatic = spec::make_auto_drafter(spec::all_auto_sources(false, "mtp"), *target, nullptr,
                                             pool, n_ctx, 16, engine::kMaxDraft, types, head.get());
    int64_t auto_drafted = 0;
    for (const int k : {1, 4, 8}) {
      const MtpRun r = generate(*target, &alone, k, c.penalty, types, pool);
      EXPECT_EQ(r.tokens, ar.tokens) << c.model << " mtp k=" << k;
      EXPECT_GT(r.drafted, 0) << c.model << " k=" << k;
      std::printf("[ mtp      ] %-28s k=%d drafted %4lld accepted %4lld\n", c.model, k,
                  static_cast<long long>(r.drafted), static_cast<long long>(r.accepted));
      const MtpRun a = generate(*target, automatic.get(), k, c.penalty, types, pool);
      EXPECT_EQ(a.tokens, ar.tokens) << c.model << " auto+mtp k=" << k;
      auto_drafted += a.drafted;
    }
    EXPECT_GT(auto_drafted, 0) << c.model;
  }
}

TEST_F(Mtp, RefusesATargetWithoutANextNLayer) {
  const auto target = model::load_model(testing::models_dir() / "zoo-target-f16.gguf");
  try {
    model::heads::NextN::load(*target);
    ADD_FAILURE() << "loaded an MTP head from a target without one";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("nextn_predict_layers"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace augur::engine
