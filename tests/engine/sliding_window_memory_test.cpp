// Gemma 3's sliding-window layers keep a ring of window + slack rows however long the text and
// however large the context: a long speculative generation leaves their resident bytes at the
// ring's bound, while the full-attention layer's bytes follow the context size.
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/cache_figures.h"
#include "cache/model_cache.h"
#include "common/error.h"
#include "engine/generator.h"
#include "model/model.h"
#include "spec/ngram_drafter.h"
#include "test_paths.h"

namespace augur::engine {
namespace {

constexpr int64_t kUbatch = 64;

struct TinyGemma3 {
  TinyGemma3() : model(model::load_model(testing::fixtures_dir() / "tiny-gemma3.gguf")), pool(2) {}
  std::unique_ptr<model::Model> model;
  kernels::ThreadPool pool;
};

sampling::Sampler greedy_sampler(const model::Model& m) {
  sampling::SamplerConfig c;
  c.temperature = 0;
  return sampling::Sampler(c, static_cast<int>(m.hparams().n_vocab));
}

// Resident bytes of the layers with (windowed) or without a window.
int64_t layer_bytes(const cache::ModelCache& cache, bool windowed) {
  int64_t bytes = 0;
  for (int layer = 0; layer < cache.n_layers(); ++layer) {
    if ((cache.layer_cache(layer).window > 0) == windowed) bytes += cache.layer_bytes(layer);
  }
  return bytes;
}

// The ring's bound: window + the rows one forward or one rollback adds past it, each of
// n_heads_kv x (K + V) row bytes.
int64_t ring_bound_bytes(const cache::ModelCache& cache, int64_t window) {
  const int64_t slots = window + std::max(kUbatch, cache::kMaxRollback);
  return slots * cache.n_heads() * static_cast<int64_t>(cache.k_row_bytes() + cache.v_row_bytes());
}

TEST(SlidingWindowMemory, LongSpeculativeGenerationStaysWithinTheRing) {
  TinyGemma3 t;
  constexpr int64_t kCtx = 1024;
  Generator gen(*t.model, t.pool, kCtx, kUbatch);
  const cache::ModelCache& cache = gen.cache();
  ASSERT_EQ(cache.n_layers(), 6);
  const int64_t window = cache.layer_cache(0).window;
  ASSERT_EQ(window, 16);
  const int64_t bytes_before = cache.bytes();

  spec::NgramDrafter drafter;
  GenerateOptions opt;
  opt.n_predict = 600;
  opt.ignore_eos = true;
  opt.drafter = &drafter;
  opt.draft_max = 8;
  sampling::SeededRng rng(1);
  const std::vector<int32_t> prompt = {2, 10, 20, 30, 40, 10, 20, 30};
  const auto r = gen.generate(prompt, greedy_sampler(*t.model), rng, opt, {});
  ASSERT_EQ(r.stats.n_gen, 600);
  // The drafter proposed and some proposals were rolled back: the ring saw rows dropped.
  EXPECT_GT(r.stats.spec.drafted, r.stats.spec.accepted);
  EXPECT_GT(r.stats.spec.accepted, 0);
  const int64_t rows = cache.size();
  ASSERT_GT(rows, 4 * (window + std::max(kUbatch, cache::kMaxRollback)));

  for (int layer = 0; layer < cache.n_layers(); ++layer) {
    const bool windowed = cache.layer_cache(layer).window > 0;
    EXPECT_EQ(windowed, layer < 5) << layer;
    const int64_t slots = windowed ? window + std::max(kUbatch, cache::kMaxRollback) : kCtx;
    EXPECT_EQ(cache.slots(layer), slots) << layer;
    EXPECT_EQ(
        cache.layer_bytes(layer),
        slots * cache.n_heads() * static_cast<int64_t>(cache.k_row_bytes() + cache.v_row_bytes()))
        << layer;
    if (windowed) {
      EXPECT_LT(cache.slots(layer), kCtx);
      // The ring no longer holds the first rows: they were overwritten, not kept.
      EXPECT_EQ(cache.first_held(layer), rows - cache.slots(layer)) << layer;
      EXPECT_THROW((void)cache.key_bytes(layer, 0, 0), InvalidArgument) << layer;
    }
  }
  EXPECT_EQ(layer_bytes(cache, /*windowed=*/true), 5 * ring_bound_bytes(cache, window));
  EXPECT_EQ(cache.bytes(), bytes_before);  // nothing grew with the text

  // The same tokens as plain greedy decoding: the bounded ring lost nothing the window needs.
  Generator ar(*t.model, t.pool, kCtx, kUbatch);
  GenerateOptions ar_opt = opt;
  ar_opt.drafter = nullptr;
  sampling::SeededRng ar_rng(1);
  EXPECT_EQ(ar.generate(prompt, greedy_sampler(*t.model), ar_rng, ar_opt, {}).tokens, r.tokens);
}

TEST(SlidingWindowMemory, WindowedBytesDoNotDependOnTheContext) {
  TinyGemma3 t;
  Generator small(*t.model, t.pool, 512, kUbatch);
  Generator large(*t.model, t.pool, 4096, kUbatch);
  const int64_t window = small.cache().layer_cache(0).window;
  EXPECT_EQ(layer_bytes(small.cache(), true), layer_bytes(large.cache(), true));
  EXPECT_EQ(layer_bytes(small.cache(), true), 5 * ring_bound_bytes(small.cache(), window));
  EXPECT_EQ(layer_bytes(large.cache(), false), 8 * layer_bytes(small.cache(), false));

  // The figures `augur run --json` reports say the same, and recompute cleanly.
  for (const Generator* gen : {&small, &large}) {
    const auto figures = bench::cache_figures(gen->cache());
    EXPECT_TRUE(bench::cache_figure_problems(figures, gen->cache().capacity()).empty());
    EXPECT_EQ(figures["window"]["layers"], 5);
    EXPECT_EQ(figures["window"]["slots"], window + std::max(kUbatch, cache::kMaxRollback));
    EXPECT_EQ(figures["window"]["bytes"], layer_bytes(gen->cache(), true));
    EXPECT_EQ(figures["full"]["layers"], 1);
    EXPECT_EQ(figures["full"]["slots"], gen->cache().capacity());
    EXPECT_EQ(figures["full"]["bytes"], layer_bytes(gen->cache(), false));
    EXPECT_EQ(figures["kv_bytes"], gen->cache().kv_bytes());
    EXPECT_EQ(figures["state_bytes"], 0);
  }
}

}  // namespace
}  // namespace augur::engine
