// A forward over several sessions' rows at once (Model::forward_segments, ForwardBatcher) gives
// every row bitwise the logits of that session's forward alone, and writes each session's K/V
// rows into its own cache only.
#include "model/forward_batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>

#include "cache/model_cache.h"
#include "support/model_session.h"
#include "test_paths.h"

namespace augur::testing {
namespace {

std::filesystem::path zoo_target() {
  return models_dir() / "zoo-target-q8_0.gguf";
}

// Session s: a prompt of its own length, then a verify-sized ubatch.
std::vector<int32_t> tokens_of(int s, int n, int64_t n_vocab = 4003) {
  const int64_t range = std::min<int64_t>(4000, n_vocab - 3);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    t[static_cast<size_t>(i)] = static_cast<int32_t>((s * 977 + i * 131 + 7) % range + 3);
  }
  return t;
}

struct Solo {
  std::vector<float> logits;  // [rows, n_vocab] of the second ubatch
  cache::ModelCache cache;
};

// On zoo-target, and on tiny-qwen35, whose recurrent layers each segment continues from its own
// state.
class ForwardSegmentsOf : public ::testing::TestWithParam<std::string> {};

TEST_P(ForwardSegmentsOf, RowsAreBitwiseTheSessionsAlone) {
  const auto model = model::load_model(shared_dir() / GetParam());
  const auto& hp = model->hparams();
  kernels::ThreadPool pool(2);
  const int n_sessions = 4;
  const int64_t n_ctx = 256;
  const auto n_vocab = static_cast<size_t>(hp.n_vocab);
  // Prefix lengths and second-ubatch lengths differ per session (prefill + decode + verify).
  const int prefix[n_sessions] = {5, 17, 1, 40};
  const int rows[n_sessions] = {1, 9, 3, 1};

  std::vector<cache::ModelCache> solo_caches, joint_caches;
  std::vector<std::vector<float>> solo_logits(n_sessions);
  for (int s = 0; s < n_sessions; ++s) {
    solo_caches.emplace_back(*model, cache::CacheOptions{.capacity = n_ctx});
    joint_caches.emplace_back(*model, cache::CacheOptions{.capacity = n_ctx});
  }
  model::Evaluator eval(*model, pool, 64, n_ctx);
  std::vector<float> scratch(n_vocab);
  for (int s = 0; s < n_sessions; ++s) {
    for (auto* c : {&solo_caches[static_cast<size_t>(s)], &joint_caches[static_cast<size_t>(s)]}) {
      eval.forward_last(tokens_of(s, prefix[s], hp.n_vocab), c->memory(), scratch.data());
      c->commit(prefix[s]);
    }
    const auto t = tokens_of(s + 100, rows[s], hp.n_vocab);
    std::vector<int32_t> pos(t.size()), out(t.size());
    std::iota(pos.begin(), pos.end(), prefix[s]);
    std::iota(out.begin(), out.end(), 0);
    solo_logits[static_cast<size_t>(s)].resize(t.size() * n_vocab);
    eval.forward(t, pos, out, solo_caches[static_cast<size_t>(s)].memory(),
                 solo_logits[static_cast<size_t>(s)].data());
  }

  // All four second ubatches in one forward.
  std::vector<int32_t> tokens, positions, out_rows;
  std::vector<model::MemorySegment> segments;
  for (int s = 0; s < n_sessions; ++s) {
    const auto t = tokens_of(s + 100, rows[s], hp.n_vocab);
    segments.push_back({static_cast<int64_t>(tokens.size()), rows[s],
                        &joint_caches[static_cast<size_t>(s)].memory()});
    for (int i = 0; i < rows[s]; ++i) {
      out_rows.push_back(static_cast<int32_t>(tokens.size()));
      tokens.push_back(t[static_cast<size_t>(i)]);
      positions.push_back(prefix[s] + i);
    }
  }
  std::vector<float> logits(out_rows.size() * n_vocab);
  const auto workspace = model->make_workspace(64, n_ctx);
  model::UbatchRequest req;
  req.tokens = tokens;
  req.positions = positions;
  req.out_rows = out_rows;
  req.logits = logits.data();
  model->forward_segments(req, segments, *workspace, pool);

  size_t row = 0;
  for (int s = 0; s < n_sessions; ++s) {
    const auto& solo = solo_logits[static_cast<size_t>(s)];
    for (int i = 0; i < rows[s]; ++i, ++row) {
      EXPECT_EQ(std::memcmp(&logits[row * n_vocab], &solo[static_cast<size_t>(i) * n_vocab],
                            n_vocab * sizeof(float)),
                0)
          << "session " << s << " row " << i;
    }
    auto& joint = joint_caches[static_cast<size_t>(s)];
    auto& alone = solo_caches[static_cast<size_t>(s)];
    ASSERT_EQ(joint.size() + joint.pending(), alone.size() + alone.pending());
    joint.commit(rows[s]);
    alone.commit(rows[s]);
    for (int layer = 0; layer < hp.n_layer; ++layer) {
      if (joint.layer_cache(layer).kind == model::LayerCache::Kind::kRecurrent) {
        const auto a = joint.state(layer), b = alone.state(layer);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size_bytes()), 0)
            << "session " << s << " layer " << layer << " state";
        continue;
      }
      for (int64_t r = 0; r < joint.size(); ++r) {
        const auto a = joint.key_row(layer, 0, r), b = alone.key_row(layer, 0, r);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size_bytes()), 0)
            << "session " << s << " layer " << layer << " row " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ForwardSegmentsOf,
                         ::testing::Values("models/zoo-target-q8_0.gguf",
                                           "fixtures/tiny-qwen35.gguf"),
                         [](const auto& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& c : name)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(ForwardSegments, RejectsSegmentsThatDoNotTileTheBatch) {
  const auto model = model::load_model(zoo_target());
  kernels::ThreadPool pool(1);
  cache::ModelCache a(*model, {.capacity = 16}), b(*model, {.capacity = 16});
  const std::vector<int32_t> tokens = {5, 6, 7};
  const std::vector<int32_t> positions = {0, 1, 0};
  const auto workspace = model->make_workspace(8, 16);
  model::UbatchRequest req;
  req.tokens = tokens;
  req.positions = positions;
  const model::MemorySegment gap[] = {{0, 1, &a.memory()}, {2, 1, &b.memory()}};
  EXPECT_DEATH(model->forward_segments(req, gap, *workspace, pool), "tile");
}

// Threads that submit at the same time get combined forwards and their own solo results.
TEST(ForwardBatcher, ConcurrentSessionsGetTheirOwnLogits) {
  const auto model = model::load_model(zoo_target());
  const auto& hp = model->hparams();
  kernels::ThreadPool pool(2);
  const auto n_vocab = static_cast<size_t>(hp.n_vocab);
  const int n_sessions = 6, steps = 12;
  const int64_t n_ctx = 128;

  // Reference: each session alone, greedy for `steps` tokens.
  const auto run_session = [&](int s, model::ForwardBatcher* batcher) {
    cache::ModelCache cache(*model, {.capacity = n_ctx});
    model::Evaluator eval(*model, pool, 32, n_ctx);
    eval.set_batcher(batcher);
    std::vector<float> logits(n_vocab);
    std::vector<int32_t> out;
    std::vector<int32_t> input = tokens_of(s, 3 + s * 5);
    if (batcher) batcher->join();
    for (int step = 0; step < steps; ++step) {
      eval.forward_last(input, cache.memory(), logits.data());
      cache.commit(static_cast<int64_t>(input.size()));
      const auto next =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      out.push_back(next);
      input = {next};
    }
    if (batcher) batcher->leave();
    return out;
  };
  std::vector<std::vector<int32_t>> solo(n_sessions), joint(n_sessions);
  for (int s = 0; s < n_sessions; ++s) solo[static_cast<size_t>(s)] = run_session(s, nullptr);

  model::ForwardBatcher batcher(*model, pool, 64, n_ctx);
  std::vector<std::thread> threads;
  for (int s = 0; s < n_sessions; ++s) {
    threads.emplace_back([&, s] { joint[static_cast<size_t>(s)] = run_session(s, &batcher); });
  }
  for (auto& t : threads) t.join();
  for (int s = 0; s < n_sessions; ++s) {
    EXPECT_EQ(joint[static_cast<size_t>(s)], solo[static_cast<size_t>(s)]) << "session " << s;
  }
  const auto stats = batcher.stats();
  EXPECT_EQ(stats.jobs, n_sessions * steps);
  // Six sessions in lockstep share forwards: far fewer forwards than session ubatches.
  EXPECT_LT(stats.forwards, stats.jobs / 2) << stats.forwards << " forwards";
}

// A session whose forward fails (its context is full) fails alone; the others still run.
TEST(ForwardBatcher, OneSessionsErrorStaysItsOwn) {
  const auto model = model::load_model(zoo_target());
  const auto& hp = model->hparams();
  kernels::ThreadPool pool(2);
  const auto n_vocab = static_cast<size_t>(hp.n_vocab);
  model::ForwardBatcher batcher(*model, pool, 64, 64);
  std::atomic<int> failures{0}, successes{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < 4; ++s) {
    threads.emplace_back([&, s] {
      cache::ModelCache cache(*model,
                              {.capacity = s == 0 ? 4 : 64});  // session 0 has room for 4 rows only
      model::Evaluator eval(*model, pool, 32, 64);
      eval.set_batcher(&batcher);
      std::vector<float> logits(n_vocab);
      batcher.join();
      try {
        eval.forward_last(tokens_of(s, 6), cache.memory(), logits.data());
        ++successes;
      } catch (const InvalidArgument&) {
        ++failures;
      }
      batcher.leave();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 1);
  EXPECT_EQ(successes.load(), 3);
}

}  // namespace
}  // namespace augur::testing

namespace augur::testing {
namespace {

// One batcher per (model, layers); join_all counts a session in each.
TEST(ForwardBatcherSet, OneBatcherPerModelAndDepth) {
  const auto model = model::load_model(models_dir() / "zoo-target-q8_0.gguf");
  kernels::ThreadPool pool(1);
  model::ForwardBatcherSet set(pool, 64, 64);
  model::ForwardBatcher& full = set.get(*model, -1);
  model::ForwardBatcher& two = set.get(*model, 2);
  EXPECT_NE(&full, &two);
  EXPECT_EQ(&set.get(*model, 2), &two);
  EXPECT_EQ(&set.get(*model, -1), &full);
  // Sessions joined through the set are waited for by both; leaving releases them.
  set.join_all();
  set.leave_all();
  cache::ModelCache cache(*model, {.capacity = 64, .n_layers = 2});
  model::Evaluator eval(*model, pool, 32, 64);
  eval.set_batcher(&two);
  std::vector<float> logits(static_cast<size_t>(model->hparams().n_vocab));
  eval.forward_last(tokens_of(1, 5), cache.memory(), logits.data(), 2);
  EXPECT_EQ(two.stats().jobs, 1);
  EXPECT_EQ(full.stats().jobs, 0);
}

}  // namespace
}  // namespace augur::testing

namespace augur::testing {
namespace {

// What a session pays for its rows of a combined forward: a share in proportion to rows until
// the batcher has timed forwards of several sizes, then the fixed part split among the
// sessions plus the marginal cost of its own rows; a session alone pays its forward.
TEST(ForwardBatcher, AttributesTheCostOfItsRows) {
  const auto model = model::load_model(models_dir() / "zoo-target-q8_0.gguf");
  kernels::ThreadPool pool(1);
  model::ForwardBatcher batcher(*model, pool, 64, 64);
  EXPECT_DOUBLE_EQ(batcher.cost_of(3, 2, 12, 1.2), 0.3);
  EXPECT_DOUBLE_EQ(batcher.cost_of(12, 1, 12, 1.2), 1.2);
  cache::ModelCache cache(*model, {.capacity = 64});
  model::Evaluator eval(*model, pool, 32, 64);
  eval.set_batcher(&batcher);
  std::vector<float> logits(static_cast<size_t>(model->hparams().n_vocab));
  for (int rows = 1; rows <= 12; ++rows) {
    eval.forward_last(tokens_of(rows, rows), cache.memory(), logits.data());
    EXPECT_GT(eval.last_forward_cost_s(), 0.0);
    cache.commit(0);
  }
  // The line is known now: the cost no longer depends on the forward's own time.
  const double small = batcher.cost_of(1, 4, 32, 1.0);
  EXPECT_EQ(small, batcher.cost_of(1, 4, 32, 100.0));
  EXPECT_GT(small, 0.0);
  EXPECT_GE(batcher.cost_of(9, 4, 32, 1.0), small);
  EXPECT_LE(batcher.cost_of(9, 4, 32, 1.0), 9 * small + 1e-12);
  EXPECT_DOUBLE_EQ(batcher.cost_of(5, 1, 5, 0.25), 0.25);
  // An evaluator without a batcher reports no attributed cost.
  model::Evaluator alone(*model, pool, 32, 64);
  EXPECT_EQ(alone.last_forward_cost_s(), -1);
}

}  // namespace
}  // namespace augur::testing
