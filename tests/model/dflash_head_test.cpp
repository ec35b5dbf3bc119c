// The DFlash drafter (model/heads/dflash.h) against an independent float64 NumPy forward of
// design/drafter-formats.md §2.2–2.3 (tools/train_drafter/make_reference_dflash.py): a tiny
// two-layer drafter with its own embeddings, its own output head and a reduced vocabulary (d2t),
// fc.scale, per-head q/k norms and NeoX RoPE. Six context rows are injected from given features,
// a block [id_last, MASK x 3] is evaluated non-causally, then three more rows are injected (the
// first block must have left nothing behind) and a block of three follows. Every block row's
// full-vocabulary logits (-inf off d2t) must match within 1e-4.
//
// Round trip: the tool-written GGUFs match their manifests key for key and tensor for tensor.
// Refusals: files that do not fit the target, and the DFlash variants this build does not run.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "common/error.h"
#include "kernels/thread_pool.h"
#include "model/evaluator.h"
#include "model/heads/dflash.h"
#include "model/heads/load_head.h"
#include "support/drafter_heads.h"
#include "support/gguf_rewrite.h"
#include "test_paths.h"

namespace augur::model::heads {
namespace {

using nlohmann::json;
using testing::floats;
using testing::max_difference;
using testing::ShapeOnlyTarget;

std::filesystem::path tiny() {
  return testing::drafter_data_dir() / "tiny-dflash.gguf";
}

// Injects `c["features"]` as the next rows of `cache`, then checks the block's logits.
void check_case(const DFlash& head, const json& c, cache::ModelCache& cache, Evaluator& eval,
                Workspace& block_ws, kernels::ThreadPool& pool, const std::string& label) {
  std::vector<float> features;
  for (const auto& row : c["features"]) {
    const auto f = floats(row);
    ASSERT_EQ(static_cast<int64_t>(f.size()), head.hidden_in_width());
    features.insert(features.end(), f.begin(), f.end());
  }
  const auto n = static_cast<int64_t>(c["features"].size());
  std::vector<int32_t> positions(static_cast<size_t>(n));
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(cache.size()));
  const std::vector<int32_t> unused_tokens(static_cast<size_t>(n), 0);
  eval.forward(unused_tokens, positions, {}, cache.memory(), nullptr, -1,
               {.hidden_in = features.data()});
  cache.commit(n);
  ASSERT_EQ(cache.size(), c["block_start"].get<int64_t>()) << label;

  const auto tokens = c["block_tokens"].get<std::vector<int32_t>>();
  const int64_t V = head.hparams().n_vocab;
  std::vector<float> logits(tokens.size() * static_cast<size_t>(V));
  head.block(tokens, cache.memory(), block_ws, logits.data(), pool);
  EXPECT_EQ(cache.size() + cache.pending(), c["block_start"].get<int64_t>())
      << label << ": the block stays out of the cache";
  for (size_t j = 0; j < tokens.size(); ++j) {
    EXPECT_LT(max_difference(&logits[j * V], floats(c["logits"][j])), 1e-4)
        << label << " block row " << j;
  }
}

TEST(DFlashHead, MatchesTheNumpyFloat64Reference) {
  const json ref = testing::read_json(testing::drafter_data_dir() / "tiny-dflash-ref.json");
  const json& dims = ref["dims"];
  const ShapeOnlyTarget target(dims["Ht"].get<int64_t>(), dims["n_vocab"].get<int64_t>(), 4);
  const auto head =
      DFlash::load(testing::drafter_data_dir() / ref["gguf"].get<std::string>(), target);
  EXPECT_EQ(head->draft_vocab(), dims["n_draft_vocab"].get<int64_t>());
  EXPECT_EQ(head->block_size(), ref["block_size"].get<int64_t>());
  EXPECT_EQ(head->mask_token(), ref["mask_token_id"].get<int32_t>());
  EXPECT_EQ(head->hparams().head_dim, dims["head_dim"].get<int64_t>());
  const auto taps = head->target_layers();
  EXPECT_EQ(std::vector<int32_t>(taps.begin(), taps.end()),
            ref["target_layers"].get<std::vector<int32_t>>());
  kernels::ThreadPool pool(2);
  cache::ModelCache cache(*head, {.capacity = 16, .max_batch = 8});
  Evaluator eval(*head, pool, 4, 16);  // case 1's six rows take two ubatches
  const auto block_ws = head->make_workspace(head->block_size(), 16);
  check_case(*head, ref["case1"], cache, eval, *block_ws, pool, "case 1");
  check_case(*head, ref["case2"], cache, eval, *block_ws, pool, "case 2");
}

TEST(DFlashHead, RefusesFilesThatDoNotFitTheTarget) {
  // Another hidden size, too few layers for its taps, d2t ids past a smaller vocabulary.
  EXPECT_THROW(DFlash::load(tiny(), ShapeOnlyTarget(64, 64, 4)), InvalidArgument);
  EXPECT_THROW(DFlash::load(tiny(), ShapeOnlyTarget(32, 64, 2)), InvalidArgument);
  EXPECT_THROW(DFlash::load(tiny(), ShapeOnlyTarget(32, 40, 4)), Error);
  // load_head picks the architecture; an EAGLE-3 file is not a DFlash drafter.
  const ShapeOnlyTarget target(32, 64, 4);
  EXPECT_NE(dynamic_cast<const DFlash*>(load_head(tiny(), target).get()), nullptr);
  EXPECT_THROW(DFlash::load(testing::drafter_data_dir() / "tiny-eagle3.gguf", target),
               InvalidArgument);
}

TEST(DFlashHead, RefusesVariantsItDoesNotRunByName) {
  const ShapeOnlyTarget target(32, 64, 4);
  const auto path = std::filesystem::temp_directory_path() /
                    ("augur-dflash-variant-" + std::to_string(::getpid()) + ".gguf");
  const auto refused = [&](const testing::GgufEdit& edit, const std::string& needle) {
    testing::rewrite_gguf(tiny(), path, edit);
    try {
      DFlash::load(path, target);
      ADD_FAILURE() << "loaded a file with " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const gguf::Value yes{gguf::ValueType::BOOL, true};
  const gguf::Value eight{gguf::ValueType::UINT32, uint64_t{8}};
  refused({.value_overrides = {{"dflash.conv_kernel_size", eight}}}, "DFlash2");
  refused({.value_overrides = {{"dflash.attention.causal", yes}}}, "causal");
  refused({.value_overrides = {{"dflash.attention.sliding_window", eight}}}, "sliding");
  refused({.drop_keys = {"tokenizer.ggml.mask_token_id"}}, "mask_token_id");
  refused({.value_overrides = {{"tokenizer.ggml.mask_token_id",
                                gguf::Value{gguf::ValueType::UINT32, uint64_t{64}}}}},
          "mask_token_id");
  refused({.drop_tensors = {"blk.1.attn_k_norm.weight"}}, "attn_k_norm");
  std::filesystem::remove(path);
}

TEST(DFlashHead, ToolWrittenFilesMatchTheirManifests) {
  testing::expect_matches_manifest(tiny());
  const auto trained = testing::source_dir() / "models" / "zoo-target-dflash-f16.gguf";
  testing::expect_matches_manifest(trained);
  const auto target = model::load_model(testing::models_dir() / "zoo-target-f16.gguf");
  const auto head = DFlash::load(trained, *target);
  EXPECT_EQ(head->hidden_in_width(),
            static_cast<int64_t>(head->target_layers().size()) * target->hparams().n_embd);
}

}  // namespace
}  // namespace augur::model::heads
