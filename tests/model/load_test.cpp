#include <gtest/gtest.h>

#include "common/error.h"
#include "model/model.h"
#include "test_paths.h"

namespace augur::model {
namespace {

TEST(LoadModel, ReportsMonotoneProgressEndingAtOne) {
  std::vector<double> seen;
  const auto m = load_model(testing::models_dir() / "zoo-target-f16.gguf",
                            [&](double f) { seen.push_back(f); });
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_GT(seen.size(), 1u);  // 58 MB of weights: more than one report
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  EXPECT_EQ(m->hparams().n_layer, 8);
}

TEST(LoadModel, ReadsHyperParametersOfEachArchitecture) {
  const auto qwen3 = load_model(testing::fixtures_dir() / "tiny-qwen3.gguf");
  EXPECT_EQ(qwen3->hparams().head_dim, 128);  // key_length, not n_embd / n_head
  EXPECT_EQ(qwen3->hparams().rope_type, RopeType::Neox);
  const auto qwen2 = load_model(testing::fixtures_dir() / "tiny-qwen2.gguf");
  EXPECT_EQ(qwen2->hparams().rope_type, RopeType::Neox);
  EXPECT_FLOAT_EQ(qwen2->hparams().rope_base, 1e6f);
  const auto llama = load_model(testing::fixtures_dir() / "tiny-llama.gguf");
  EXPECT_EQ(llama->hparams().rope_type, RopeType::Norm);
  EXPECT_EQ(llama->hparams().n_head_kv, 2);
}

TEST(LoadModel, VocabOnlyFileIsNotAModel) {
  EXPECT_THROW(
      (void)load_model(testing::fixtures_dir() / "tokenizers" / "ggml-vocab-llama-spm.gguf"),
      FormatError);
}

}  // namespace
}  // namespace augur::model
