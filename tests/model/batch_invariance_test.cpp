// A row's logits and K/V do not depend on how many other rows share its forward call: one batch,
// ubatches of 5, and token by token give bitwise-equal results. Speculative verify (M = k+1 rows)
// therefore computes exactly what AR decode computes, and rollback can be checked bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "support/model_session.h"
#include "support/requested_isa.h"
#include "test_paths.h"

namespace augur {
namespace {

using testing::ModelSession;

std::vector<int32_t> some_tokens(int64_t n_vocab, int n) {
  std::vector<int32_t> tokens;
  uint32_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    tokens.push_back(static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(n_vocab)));
  }
  return tokens;
}

class BatchInvariance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE(); }
};

TEST_P(BatchInvariance, LogitsAndCacheRowsAreBitwiseIndependentOfBatchShape) {
  const auto path = std::filesystem::path(GetParam()).is_absolute()
                        ? std::filesystem::path(GetParam())
                        : testing::shared_dir() / GetParam();
  ModelSession batch(path, 512), chunked(path, 5), single(path, 512);
  const auto tokens = some_tokens(batch.n_vocab(), 37);
  const auto n_vocab = static_cast<size_t>(batch.n_vocab());

  const auto all = batch.all_logits(tokens);
  const auto all_chunked = chunked.all_logits(tokens);
  std::vector<float> one_by_one;
  for (int32_t t : tokens) {
    const auto row = single.all_logits({t});
    one_by_one.insert(one_by_one.end(), row.begin(), row.end());
  }
  ASSERT_EQ(all.size(), tokens.size() * n_vocab);
  EXPECT_EQ(0, std::memcmp(all.data(), all_chunked.data(), all.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(all.data(), one_by_one.data(), all.size() * sizeof(float)));

  for (int layer = 0; layer < batch.cache.n_layers(); ++layer) {
    if (batch.cache.layer_cache(layer).kind == model::LayerCache::Kind::kRecurrent) {
      // A recurrent layer keeps no rows, only the state after the last one.
      const auto a = batch.cache.state(layer), b = single.cache.state(layer);
      ASSERT_EQ(a.size(), b.size());
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size_bytes())) << "state layer " << layer;
      continue;
    }
    for (int head = 0; head < batch.cache.n_heads(); ++head) {
      for (int64_t row = 0; row < static_cast<int64_t>(tokens.size()); ++row) {
        const auto k = batch.cache.key_row(layer, head, row);
        const auto v = batch.cache.value_row(layer, head, row);
        ASSERT_EQ(
            0, std::memcmp(k.data(), single.cache.key_row(layer, head, row).data(), k.size_bytes()))
            << "key layer " << layer << " head " << head << " row " << row;
        ASSERT_EQ(0, std::memcmp(v.data(), single.cache.value_row(layer, head, row).data(),
                                 v.size_bytes()))
            << "value layer " << layer << " head " << head << " row " << row;
      }
    }
  }
  // The chunked run's recurrent states too (its last ubatch had fewer rows).
  for (int layer = 0; layer < batch.cache.n_layers(); ++layer) {
    if (batch.cache.layer_cache(layer).kind != model::LayerCache::Kind::kRecurrent) continue;
    const auto a = batch.cache.state(layer), b = chunked.cache.state(layer);
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size_bytes())) << "state layer " << layer;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, BatchInvariance,
    ::testing::Values("models/zoo-target-f16.gguf", "models/zoo-target-q8_0.gguf",
                      "fixtures/tiny-qwen2.gguf", "fixtures/tiny-qwen3.gguf",
                      "fixtures/tiny-qwen3moe.gguf", "fixtures/tiny-llama-Q4_0.gguf",
                      "fixtures/tiny-gemma3.gguf", "fixtures/tiny-qwen35.gguf"),
    [](const auto& info) {
      std::string name = std::filesystem::path(info.param).stem().string();
      for (char& c : name)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

}  // namespace
}  // namespace augur
