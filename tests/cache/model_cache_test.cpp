#include "cache/model_cache.h"

#include <gtest/gtest.h>

#include <numeric>

#include "common/error.h"
#include "support/model_session.h"
#include "test_paths.h"

namespace augur::cache {
namespace {

using testing::ModelSession;

std::filesystem::path tiny() {
  return testing::fixtures_dir() / "tiny-qwen3.gguf";
}

// Every stored K/V row of `a` and `b` for rows [0, n) within atol.
void expect_same_rows(const ModelCache& a, const ModelCache& b, int64_t n, float atol) {
  for (int layer = 0; layer < a.n_layers(); ++layer) {
    for (int head = 0; head < a.n_heads(); ++head) {
      for (int64_t row = 0; row < n; ++row) {
        const auto ka = a.key_row(layer, head, row), kb = b.key_row(layer, head, row);
        const auto va = a.value_row(layer, head, row), vb = b.value_row(layer, head, row);
        for (size_t i = 0; i < ka.size(); ++i) {
          ASSERT_NEAR(ka[i], kb[i], atol)
              << "layer " << layer << " head " << head << " row " << row;
          ASSERT_NEAR(va[i], vb[i], atol)
              << "layer " << layer << " head " << head << " row " << row;
        }
      }
    }
  }
}

TEST(ModelCache, CommitKeepsOnlyTheFirstPendingRows) {
  ModelSession s(tiny());
  (void)s.last_logits({10, 11, 12});
  EXPECT_EQ(s.cache.size(), 3);
  std::vector<float> logits(512);
  s.eval.forward_last(std::vector<int32_t>{20, 21, 22, 23}, s.cache.memory(), logits.data());
  EXPECT_EQ(s.cache.pending(), 4);
  s.cache.commit(1);
  EXPECT_EQ(s.cache.size(), 4);
  EXPECT_EQ(s.cache.pending(), 0);
  EXPECT_THROW((void)s.cache.key_row(0, 0, 4), InvalidArgument);
}

TEST(ModelCache, RejectsImpossibleCommitsAndTruncates) {
  ModelSession s(tiny());
  (void)s.last_logits({10, 11});
  EXPECT_THROW(s.cache.commit(1), InvalidArgument);  // nothing pending
  EXPECT_THROW(s.cache.truncate(3), InvalidArgument);
  s.cache.truncate(1);
  EXPECT_EQ(s.cache.size(), 1);
}

// After a verify-shaped block [c, d1..d4] of which only c, d1 are kept, the cache holds what a
// fresh autoregressive run over the committed tokens holds, and continuing gives the same logits.
TEST(ModelCache, RolledBackCacheEqualsFreshRunOverCommittedTokens) {
  const std::vector<int32_t> prompt = {5, 77, 300, 41, 9, 128, 64};
  ModelSession spec(tiny());
  (void)spec.last_logits(prompt);
  std::vector<float> block_logits(5 * 512);
  const std::vector<int32_t> block = {100, 101, 102, 103, 104};
  std::vector<int32_t> positions(5), rows = {0, 1, 2, 3, 4};
  for (int i = 0; i < 5; ++i) positions[i] = static_cast<int32_t>(prompt.size()) + i;
  spec.eval.forward(block, positions, rows, spec.cache.memory(), block_logits.data());
  spec.cache.commit(2);

  ModelSession fresh(tiny());
  std::vector<int32_t> committed = prompt;
  committed.insert(committed.end(), {100, 101});
  for (int32_t t : committed) (void)fresh.last_logits({t});
  ASSERT_EQ(spec.cache.size(), fresh.cache.size());
  expect_same_rows(spec.cache, fresh.cache, fresh.cache.size(), 1e-4f);

  const auto next_spec = spec.last_logits({7});
  const auto next_fresh = fresh.last_logits({7});
  for (size_t i = 0; i < next_spec.size(); ++i) ASSERT_NEAR(next_spec[i], next_fresh[i], 1e-3f);
}

// Same batch shapes give bit-identical rows.
TEST(ModelCache, SameScheduleGivesBitIdenticalRows) {
  const std::vector<int32_t> prompt = {5, 77, 300, 41, 9, 128, 64};
  ModelSession a(tiny()), b(tiny());
  (void)a.last_logits(prompt);
  (void)a.last_logits({100, 101, 102});
  (void)b.last_logits(prompt);
  (void)b.last_logits({100, 101, 102});
  expect_same_rows(a.cache, b.cache, a.cache.size(), 0.0f);
}

// Memory::kv / state of a layer the cache does not hold, or of a layer of the other kind, is a
// caller's bug: it stops with a message instead of handing out a pointer past the buffer.
TEST(ModelCache, RowsOfALayerItDoesNotHoldStop) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto model = model::load_model(tiny());
  ModelCache cache(*model, {.capacity = 8});
  model::Memory& memory = cache.memory();
  const int n_layers = cache.n_layers();
  EXPECT_NE(memory.kv(n_layers - 1).k, nullptr);
  EXPECT_DEATH((void)memory.kv(n_layers), "a layer it does not hold");
  EXPECT_DEATH((void)memory.kv(-1), "a layer it does not hold");
  EXPECT_DEATH((void)memory.state(0, 0), "a layer of another kind");
}

// A forward over every layer on top of a layer-skip memory (which keeps only the first layers)
// stops at the first layer the memory lacks.
TEST(ModelCache, ForwardOverMoreLayersThanALayerSkipMemoryHoldsStops) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ModelSession s(tiny());
  ModelCache shallow(*s.model, {.capacity = 8, .n_layers = 2});
  std::vector<float> logits(static_cast<size_t>(s.n_vocab()));
  s.eval.forward_last(std::vector<int32_t>{1, 2}, shallow.memory(), logits.data(), 2);
  shallow.commit(2);
  EXPECT_DEATH(s.eval.forward_last(std::vector<int32_t>{3}, shallow.memory(), logits.data()),
               "a layer it does not hold");
}

}  // namespace
}  // namespace augur::cache

namespace augur::cache {
namespace {

std::filesystem::path gemma3() {
  return testing::fixtures_dir() / "tiny-gemma3.gguf";
}

// A sliding-window layer keeps a ring of window + max(batch, rollback) slots whatever the context
// size; a full layer keeps every row.
TEST(ModelCacheRing, WindowedLayersHoldARingBoundedByTheWindow) {
  const auto model = model::load_model(gemma3());
  const int64_t window = model->hparams().sliding_window;
  ASSERT_GT(window, 0);
  ModelCache small(*model, {.capacity = 512, .max_batch = 8});
  ModelCache large(*model, {.capacity = 4096, .max_batch = 8});
  for (int layer = 0; layer < small.n_layers(); ++layer) {
    const auto spec = small.layer_cache(layer);
    EXPECT_EQ(spec.window, model->hparams().is_swa(layer) ? window : 0) << layer;
    const model::KvRows a = small.memory().kv(layer), b = large.memory().kv(layer);
    if (spec.window > 0) {
      EXPECT_EQ(a.slots, window + kMaxRollback);
      EXPECT_EQ(b.slots, a.slots);
    } else {
      EXPECT_EQ(a.slots, 512);
      EXPECT_EQ(b.slots, 4096);
    }
  }
}

// Dropping more pending rows than a ring keeps room for cannot be undone: it throws, where a
// full cache (which loses nothing) allows it.
TEST(ModelCacheRing, RollbackDeeperThanTheRingAllowsThrows) {
  testing::ModelSession ring(gemma3(), 64), full(tiny(), 64);
  std::vector<int32_t> rows(kMaxRollback + 2);
  std::iota(rows.begin(), rows.end(), 1);
  std::vector<float> logits(512);
  ring.eval.forward_last(rows, ring.cache.memory(), logits.data());
  EXPECT_THROW(ring.cache.commit(0), InvalidArgument);
  ring.cache.commit(2);  // drops kMaxRollback rows: within the ring's slack
  EXPECT_EQ(ring.cache.size(), 2);
  full.eval.forward_last(rows, full.cache.memory(), logits.data());
  full.cache.commit(0);
  EXPECT_EQ(full.cache.size(), 0);
}

// A ring can go back only while it still holds the rows the window needs there; save/restore of
// what a later row can see round-trips.
TEST(ModelCacheRing, TruncateAndSaveOnlyWhereTheWindowsRowsAreHeld) {
  testing::ModelSession s(gemma3(), 8, 512);
  std::vector<int32_t> tokens(200);
  std::iota(tokens.begin(), tokens.end(), 3);
  (void)s.last_logits(tokens);
  const int64_t slots = s.cache.memory().kv(0).slots;
  EXPECT_TRUE(s.cache.can_truncate(200));
  EXPECT_TRUE(s.cache.can_truncate(200 - slots + 16));
  EXPECT_FALSE(s.cache.can_truncate(100));
  EXPECT_TRUE(s.cache.can_truncate(0));
  EXPECT_THROW(s.cache.truncate(100), InvalidArgument);
  EXPECT_THROW((void)s.cache.save(100), InvalidArgument);

  const auto saved = s.cache.save(200);
  const auto next = s.last_logits({42});
  testing::ModelSession t(gemma3(), 8, 512);
  t.cache.restore(saved, 200);
  EXPECT_EQ(t.last_logits({42}), next);
}

}  // namespace
}  // namespace augur::cache
