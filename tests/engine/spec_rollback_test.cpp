// Rollback: after every speculative cycle, the target cache and the drafter's cache hold exactly
// rows of committed tokens, bit for bit the rows a fresh AR evaluation of those tokens computes
// (kernels are batch-invariant, tests/model/batch_invariance_test.cpp), and nothing else: no
// pending rows, no row of a rejected draft — in F32 and in quantized (q8_0, q4_0) caches, whose
// stored blocks are compared. The checker itself is shown to catch a planted stale
// row (a "trim" that did nothing).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "support/spec_setup.h"

namespace augur::engine {
namespace {

using testing::kNeverEog;

// K/V rows of `tokens` evaluated from scratch by `m` (first n_layers layers; -1 = all).
cache::ModelCache fresh_rows(const model::Model& m, kernels::ThreadPool& pool,
                             const std::vector<int32_t>& tokens, int64_t capacity, int n_layers,
                             cache::CacheTypes types = {}) {
  cache::ModelCache cache(
      m, {.capacity = capacity, .n_layers = n_layers, .type_k = types.k, .type_v = types.v});
  model::Evaluator eval(m, pool, 64, capacity);
  std::vector<int32_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), 0);
  eval.forward(tokens, positions, {}, cache.memory(), nullptr, n_layers);
  cache.commit(static_cast<int64_t>(tokens.size()));
  return cache;
}

bool has_recurrent_layer(const cache::ModelCache& c) {
  for (int layer = 0; layer < c.n_layers(); ++layer) {
    if (c.layer_cache(layer).kind == model::LayerCache::Kind::kRecurrent) return true;
  }
  return false;
}

// Empty when the first n rows of `got` equal those of `want` bitwise — K/V rows as stored (F32
// floats or q8_0/q4_0 blocks), and each recurrent layer's state (which is that of all rows, so
// `want` must hold exactly n); else names the first difference.
std::string first_row_difference(const cache::ModelCache& got, const cache::ModelCache& want,
                                 int64_t n) {
  for (int layer = 0; layer < got.n_layers(); ++layer) {
    if (got.layer_cache(layer).kind == model::LayerCache::Kind::kRecurrent) {
      if (want.size() != n || got.size() != n) return "recurrent state of another row count";
      const auto a = got.state(layer), b = want.state(layer);
      if (std::memcmp(a.data(), b.data(), a.size_bytes()) != 0) {
        return "layer " + std::to_string(layer) + " recurrent state";
      }
      continue;
    }
    for (int head = 0; head < got.n_heads(); ++head) {
      for (int64_t row = 0; row < n; ++row) {
        // Stored bytes: F32 floats or the quantized blocks of q8_0/q4_0 rows.
        const auto k = got.key_bytes(layer, head, row);
        const auto v = got.value_bytes(layer, head, row);
        const auto want_k = want.key_bytes(layer, head, row);
        const auto want_v = want.value_bytes(layer, head, row);
        if (k.size() != want_k.size() || v.size() != want_v.size() ||
            std::memcmp(k.data(), want_k.data(), k.size()) != 0 ||
            std::memcmp(v.data(), want_v.data(), v.size()) != 0) {
          return "layer " + std::to_string(layer) + " head " + std::to_string(head) + " row " +
                 std::to_string(row);
        }
      }
    }
  }
  return "";
}

// What a fresh AR evaluation leaves for the first tokens `got` holds: `full` (over every
// committed token) serves for K/V rows; a recurrent state needs a run over exactly those tokens.
std::string difference_from_fresh(const cache::ModelCache& got, const cache::ModelCache& full,
                                  const model::Model& m, kernels::ThreadPool& pool,
                                  const std::vector<int32_t>& tokens, int64_t capacity,
                                  int n_layers, cache::CacheTypes types = {}) {
  if (!has_recurrent_layer(got) || got.size() == 0)
    return first_row_difference(got, full, got.size());
  const std::vector<int32_t> held(tokens.begin(), tokens.begin() + got.size());
  return first_row_difference(got, fresh_rows(m, pool, held, capacity, n_layers, types),
                              got.size());
}

struct Case {
  std::string name;
  std::string drafter;  // as testing::make_test_drafter
  float temperature;
  std::string fixture;  // target: this fixture on one of its own prompts; empty = zoo-target
  std::string cache_type = "f32";  // K and V, target and drafter
};

class SpecRollback : public ::testing::TestWithParam<Case> {};

TEST_P(SpecRollback, CachesHoldExactlyTheCommittedRowsAfterEveryCycle) {
  const Case& c = GetParam();
  auto target =
      model::load_model(c.fixture.empty() ? testing::models_dir() / "zoo-target-q8_0.gguf"
                                          : testing::fixtures_dir() / (c.fixture + ".gguf"));
  kernels::ThreadPool pool(2);
  // A fixture's byte-level vocabulary would make the zoo prompt longer than the context.
  const auto prompt =
      c.fixture.empty()
          ? testing::zoo_prompts(*target, 3)[2]
          : testing::read_json(testing::fixtures_dir() / (c.fixture + ".ref.json"))["prompts"][2]
                .get<std::vector<int32_t>>();
  constexpr int64_t kCtx = 256;
  const auto sampler = testing::make_sampler(*target, c.temperature);
  const gguf::TensorType type = cache::parse_cache_type(c.cache_type);
  const cache::CacheTypes types{type, type};
  GenerateOptions opt;
  // 96 tokens; 48 on the portable kernel path (AUGUR_ISA=scalar, CMakeLists.txt), which runs the
  // zoo models about 28x slower (measured 153 s against 5.5 s for the four drafters): still
  // about ten cycles, rejected drafts among them.
  opt.n_predict = kernels::current_isa() == kernels::Isa::kScalar ? 48 : 96;
  opt.ignore_eos = true;
  opt.draft_max = 4;

  // Run 1 finds the committed tokens; run 2 (same seed, fresh state) checks every cycle against
  // fresh rows of them.
  std::vector<int32_t> committed;
  {
    Generator gen(*target, pool, kCtx, 16, types);
    auto h = testing::make_test_drafter(c.drafter, *target, pool, kCtx, 16, types);
    opt.drafter = h.drafter.get();
    sampling::SeededRng rng(11);
    const auto r = gen.generate(prompt, sampler, rng, opt, kNeverEog);
    committed = prompt;
    committed.insert(committed.end(), r.tokens.begin(), r.tokens.end());
  }
  const auto want_target = fresh_rows(*target, pool, committed, kCtx, -1, types);

  Generator gen(*target, pool, kCtx, 16, types);
  auto h = testing::make_test_drafter(c.drafter, *target, pool, kCtx, 16, types);
  std::unique_ptr<cache::ModelCache> want_drafter;
  if (h.model_drafter) {
    const model::Model& dm = h.draft_model ? *h.draft_model : *target;
    want_drafter = std::make_unique<cache::ModelCache>(
        fresh_rows(dm, pool, committed, kCtx, h.n_layers, types));
  }
  opt.drafter = h.drafter.get();
  int cycles = 0, cycles_with_rejection = 0;
  opt.on_cycle = [&](const CycleInfo& info) {
    ++cycles;
    if (info.accepted < info.drafted) ++cycles_with_rejection;
    const std::vector<int32_t> now(info.committed.begin(), info.committed.end());
    ASSERT_LE(now.size(), committed.size());
    ASSERT_TRUE(std::equal(now.begin(), now.end(), committed.begin())) << "not deterministic";
    // Target: every committed token but the last (the next verify's carry), nothing pending.
    const auto& tc = gen.cache();
    EXPECT_EQ(tc.pending(), 0);
    EXPECT_EQ(tc.size(), static_cast<int64_t>(now.size()) - 1) << "cycle " << cycles;
    EXPECT_TRUE(std::equal(gen.cached_tokens().begin(), gen.cached_tokens().end(), now.begin()));
    EXPECT_EQ(difference_from_fresh(tc, want_target, *target, pool, now, kCtx, -1, types), "")
        << "target, cycle " << cycles;
    if (h.model_drafter) {
      // Drafter: a prefix of the committed tokens, lagging by at most the carry and one fully
      // accepted draft (it never saw them), nothing pending.
      const auto& dc = h.model_drafter->cache();
      const auto& dt = h.model_drafter->cached_tokens();
      EXPECT_EQ(dc.pending(), 0);
      EXPECT_EQ(dc.size(), static_cast<int64_t>(dt.size()));
      EXPECT_LE(dt.size(), now.size());
      EXPECT_GE(dt.size() + 2, now.size()) << "drafter fell behind: it would re-evaluate";
      EXPECT_TRUE(std::equal(dt.begin(), dt.end(), now.begin()))
          << "drafter holds a non-committed token";
      const model::Model& dm = h.draft_model ? *h.draft_model : *target;
      EXPECT_EQ(difference_from_fresh(dc, *want_drafter, dm, pool, now, kCtx, h.n_layers, types),
                "")
          << "drafter, cycle " << cycles;
    }
  };
  sampling::SeededRng rng(11);
  gen.generate(prompt, sampler, rng, opt, kNeverEog);
  EXPECT_GT(cycles, 5);
  EXPECT_GT(cycles_with_rejection, 0) << "no rejection: rollback was never exercised";
  std::printf("[ rollback ] %s: %d cycles, %d with a rejected draft\n", c.name.c_str(), cycles,
              cycles_with_rejection);
}

INSTANTIATE_TEST_SUITE_P(
    Drafters, SpecRollback,
    ::testing::Values(
        Case{"DraftModelGreedy", "model:" + (testing::models_dir() / "zoo-draft-f16.gguf").string(),
             0.0f},
        Case{"DraftModelSampled",
             "model:" + (testing::models_dir() / "zoo-draft-f16.gguf").string(), 0.8f},
        Case{"LayerSkipSampled", "layerskip:3", 0.8f}, Case{"NgramGreedy", "ngram", 0.0f},
        // Hybrid (Gated DeltaNet + attention): the recurrent states rolled back to the kept row.
        Case{"Qwen35LayerSkipSampled", "layerskip:1", 0.8f, "tiny-qwen35"},
        Case{"Qwen35NgramSampled", "ngram", 0.8f, "tiny-qwen35"},
        Case{"DraftModelGreedyKvQ8_0",
             "model:" + (testing::models_dir() / "zoo-draft-f16.gguf").string(), 0.0f, "", "q8_0"},
        Case{"DraftModelSampledKvQ4_0",
             "model:" + (testing::models_dir() / "zoo-draft-f16.gguf").string(), 0.8f, "", "q4_0"},
        Case{"LayerSkipSampledKvQ4_0", "layerskip:3", 0.8f, "", "q4_0"},
        Case{"NgramGreedyKvQ8_0", "ngram", 0.0f, "", "q8_0"}),
    [](const auto& info) { return info.param.name; });

// The checker catches a cache that kept a rejected draft's row: evaluate a wrong token where a
// committed one belongs, "roll back" by committing everything, then continue.
TEST(SpecRollbackChecker, CatchesAStaleRowOfARejectedDraft) {
  auto target = model::load_model(testing::models_dir() / "zoo-target-q8_0.gguf");
  kernels::ThreadPool pool(2);
  const auto tokens = testing::zoo_prompts(*target, 1)[0];
  ASSERT_GE(tokens.size(), 4u);
  const auto want = fresh_rows(*target, pool, tokens, 256, -1);

  const std::vector<int32_t> head(tokens.begin(), tokens.end() - 2);
  std::vector<int32_t> stale = head;
  stale.push_back(tokens[tokens.size() - 2] == 5 ? 6 : 5);  // a rejected draft, never trimmed
  stale.push_back(tokens.back());
  const auto got = fresh_rows(*target, pool, stale, 256, -1);
  EXPECT_EQ(first_row_difference(got, want, static_cast<int64_t>(head.size())), "");
  EXPECT_NE(first_row_difference(got, want, static_cast<int64_t>(tokens.size())), "");
}

// The same checker on a recurrent state: a state that went through another token shows (in the
// first, recurrent, layer).
TEST(SpecRollbackChecker, CatchesARecurrentStateOfOtherTokens) {
  auto m = model::load_model(testing::fixtures_dir() / "tiny-qwen35.gguf");
  kernels::ThreadPool pool(2);
  const std::vector<int32_t> tokens = {5, 77, 300, 41, 9};
  const auto want = fresh_rows(*m, pool, tokens, 64, -1);
  EXPECT_EQ(difference_from_fresh(want, want, *m, pool, tokens, 64, -1), "");
  std::vector<int32_t> other = tokens;
  other[2] = 301;  // a rejected draft's row left in the state
  EXPECT_EQ(first_row_difference(fresh_rows(*m, pool, other, 64, -1), want, 5),
            "layer 0 recurrent state");
}

}  // namespace
}  // namespace augur::engine
