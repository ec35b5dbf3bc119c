// The EAGLE-3 head (model/heads/eagle3.h) against an independent float64 NumPy forward of
// design/drafter-formats.md §1.3 (tools/train_drafter/make_reference_eagle3.py): a tiny head
// with its own embeddings, its own output head and a reduced vocabulary (d2t), six rows of pairs
// from given features, then three autoregressive steps fed their own y. g, y and the
// full-vocabulary logits (-inf off d2t) must match within 1e-4.
//
// Round trip: every GGUF the training tool writes comes with <file>.manifest.json listing every
// key (type, value or the sha256 of an array's packed items) and tensor (shape, type, sha256 of
// its bytes); augur's reader must see exactly those, nothing more, and the head must load.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "bench/build_info.h"
#include "cache/model_cache.h"
#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "kernels/thread_pool.h"
#include "model/evaluator.h"
#include "model/heads/eagle3.h"
#include "support/drafter_heads.h"
#include "support/reference.h"
#include "test_paths.h"

namespace augur::model::heads {
namespace {

using nlohmann::json;
using testing::expect_matches_manifest;
using testing::floats;
using testing::max_difference;
using testing::ShapeOnlyTarget;

std::filesystem::path data_dir() {
  return testing::drafter_data_dir();
}

TEST(Eagle3Head, MatchesTheNumpyFloat64Reference) {
  const json ref = testing::read_json(data_dir() / "tiny-eagle3-ref.json");
  const json& dims = ref["dims"];
  const ShapeOnlyTarget target(dims["Ht"].get<int64_t>(), dims["n_vocab"].get<int64_t>(), 4);
  const auto head = Eagle3::load(data_dir() / ref["gguf"].get<std::string>(), target);
  ASSERT_EQ(head->draft_vocab(), dims["n_draft_vocab"].get<int64_t>());
  const auto taps = head->target_layers();
  EXPECT_EQ(std::vector<int32_t>(taps.begin(), taps.end()),
            ref["target_layers"].get<std::vector<int32_t>>());
  kernels::ThreadPool pool(2);
  const int64_t D = head->hparams().n_embd, V = head->hparams().n_vocab;
  cache::ModelCache cache(*head, {.capacity = 16, .max_batch = 8});
  Evaluator eval(*head, pool, 8, 16);
  constexpr double kTolerance = 1e-4;

  // Case 1: six pairs in one forward.
  const json& c1 = ref["case1"];
  const auto n = static_cast<int64_t>(c1["tokens"].size());
  std::vector<float> features;
  for (const auto& row : c1["features"]) {
    const auto f = floats(row);
    features.insert(features.end(), f.begin(), f.end());
  }
  std::vector<float> g(static_cast<size_t>(n * D)), y(g.size());
  head->fuse(features.data(), n, g.data(), pool);
  std::vector<int32_t> rows(static_cast<size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<float> logits(static_cast<size_t>(n * V));
  eval.forward(c1["tokens"].get<std::vector<int32_t>>(),
               c1["positions"].get<std::vector<int32_t>>(), rows, cache.memory(), logits.data(), -1,
               {.hidden_in = g.data(), .hidden_out = y.data()});
  cache.commit(n);
  for (int64_t r = 0; r < n; ++r) {
    const json& want = c1["rows"][static_cast<size_t>(r)];
    EXPECT_LT(max_difference(&g[r * D], floats(want["g"])), kTolerance) << "g of row " << r;
    EXPECT_LT(max_difference(&y[r * D], floats(want["y"])), kTolerance) << "y of row " << r;
    EXPECT_LT(max_difference(&logits[r * V], floats(want["logits"])), kTolerance)
        << "logits of row " << r;
  }

  // Case 2: autoregressive steps on the same cache, each fed the previous y.
  std::vector<float> last(y.end() - D, y.end());
  for (const json& step : ref["case2"]["steps"]) {
    EXPECT_LT(max_difference(last.data(), floats(step["g"])), kTolerance);
    const int32_t token = step["token"].get<int32_t>(), pos = step["pos"].get<int32_t>(), row = 0;
    std::vector<float> out(static_cast<size_t>(D)), step_logits(static_cast<size_t>(V));
    eval.forward(std::span<const int32_t>(&token, 1), std::span<const int32_t>(&pos, 1),
                 std::span<const int32_t>(&row, 1), cache.memory(), step_logits.data(), -1,
                 {.hidden_in = last.data(), .hidden_out = out.data()});
    cache.commit(1);
    EXPECT_LT(max_difference(out.data(), floats(step["y"])), kTolerance) << "step at " << pos;
    EXPECT_LT(max_difference(step_logits.data(), floats(step["logits"])), kTolerance)
        << "step at " << pos;
    last = out;
  }
}

TEST(Eagle3Head, RefusesHeadsThatDoNotFitTheTarget) {
  const auto path = data_dir() / "tiny-eagle3.gguf";
  // Another hidden size, and too few layers for its taps.
  EXPECT_THROW(Eagle3::load(path, ShapeOnlyTarget(64, 64, 4)), InvalidArgument);
  EXPECT_THROW(Eagle3::load(path, ShapeOnlyTarget(32, 64, 2)), InvalidArgument);
  // d2t ids past a smaller vocabulary.
  EXPECT_THROW(Eagle3::load(path, ShapeOnlyTarget(32, 40, 4)), Error);
}

TEST(Eagle3Head, ToolWrittenFilesMatchTheirManifests) {
  expect_matches_manifest(data_dir() / "tiny-eagle3.gguf");
  const auto trained = testing::source_dir() / "models" / "zoo-target-eagle3-f16.gguf";
  expect_matches_manifest(trained);
  const auto target = model::load_model(testing::models_dir() / "zoo-target-f16.gguf");
  const auto head = Eagle3::load(trained, *target);
  EXPECT_EQ(head->target_hidden(), target->hparams().n_embd);
  // Its Q8_0 copy (`augur quantize`) loads the same way.
  const auto quantized = testing::source_dir() / "models" / "zoo-target-eagle3-q8_0.gguf";
  expect_matches_manifest(quantized);
  EXPECT_EQ(Eagle3::load(quantized, *target)->target_hidden(), target->hparams().n_embd);
}

}  // namespace
}  // namespace augur::model::heads
