// A recurrent layer's rollback (ModelCache::commit) on tiny-qwen35 (three Gated DeltaNet layers,
// one attention layer): after a forward of M rows, commit(keep) for every keep in 0..M leaves
// bitwise the states of a fresh run over the prompt and the first `keep` rows. The comparison is
// shown to catch the defects a rollback could have: installing the state after row keep + 1, or
// restoring S but leaving another row's conv window.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "support/model_session.h"
#include "support/reference.h"
#include "test_paths.h"

namespace augur::cache {
namespace {

using testing::ModelSession;

std::filesystem::path tiny() {
  return testing::fixtures_dir() / "tiny-qwen35.gguf";
}

// Each recurrent layer's committed state, by layer.
using States = std::vector<std::vector<float>>;

States recurrent_states(const ModelCache& cache) {
  States states(static_cast<size_t>(cache.n_layers()));
  for (int layer = 0; layer < cache.n_layers(); ++layer) {
    if (cache.layer_cache(layer).kind != model::LayerCache::Kind::kRecurrent) continue;
    const auto s = cache.state(layer);
    states[static_cast<size_t>(layer)].assign(s.begin(), s.end());
  }
  return states;
}

// "" when `a` and `b` are bitwise equal, else where they first differ.
std::string first_difference(const States& a, const States& b) {
  if (a.size() != b.size()) return "layer counts differ";
  for (size_t layer = 0; layer < a.size(); ++layer) {
    if (a[layer].size() != b[layer].size())
      return "state sizes differ, layer " + std::to_string(layer);
    for (size_t i = 0; i < a[layer].size(); ++i) {
      if (std::memcmp(&a[layer][i], &b[layer][i], sizeof(float)) != 0) {
        return "layer " + std::to_string(layer) + " float " + std::to_string(i);
      }
    }
  }
  return "";
}

const std::vector<int32_t> kPrompt = {5, 77, 300, 41, 9, 128, 64};
const std::vector<int32_t> kBlock = {100, 101, 102, 103, 104, 105};

// The states after the prompt, then the block as one forward (a verify) committed up to `keep`.
States verified(int64_t keep) {
  ModelSession s(tiny());
  (void)s.last_logits(kPrompt);
  std::vector<int32_t> positions, rows;
  for (size_t i = 0; i < kBlock.size(); ++i) {
    positions.push_back(static_cast<int32_t>(kPrompt.size() + i));
    rows.push_back(static_cast<int32_t>(i));
  }
  std::vector<float> logits(kBlock.size() * static_cast<size_t>(s.n_vocab()));
  s.eval.forward(kBlock, positions, rows, s.cache.memory(), logits.data());
  s.cache.commit(keep);
  EXPECT_EQ(s.cache.size(), static_cast<int64_t>(kPrompt.size()) + keep);
  return recurrent_states(s.cache);
}

// The prompt and the first `keep` block tokens, one at a time.
States fresh_states(int64_t keep) {
  ModelSession s(tiny());
  (void)s.last_logits(kPrompt);
  for (int64_t i = 0; i < keep; ++i) (void)s.last_logits({kBlock[static_cast<size_t>(i)]});
  return recurrent_states(s.cache);
}

TEST(RecurrentCommit, CommitInstallsExactlyTheStateAfterTheKeptRows) {
  const int64_t M = static_cast<int64_t>(kBlock.size());
  for (int64_t keep = 0; keep <= M; ++keep) {
    EXPECT_EQ(first_difference(verified(keep), fresh_states(keep)), "") << "keep " << keep;
  }
}

TEST(RecurrentCommit, ComparisonCatchesTheStateOfTheNextRow) {
  for (int64_t keep = 0; keep < static_cast<int64_t>(kBlock.size()); ++keep) {
    EXPECT_NE(first_difference(verified(keep + 1), fresh_states(keep)), "") << "keep " << keep;
  }
}

TEST(RecurrentCommit, ComparisonCatchesAConvWindowLeftBehind) {
  const int64_t keep = 3;
  const auto expected = fresh_states(keep);
  const auto other = fresh_states(keep + 1);
  auto planted = verified(keep);
  ASSERT_EQ(first_difference(planted, expected), "");
  // S restored, but the conv window (the state's leading floats: kernel - 1 inputs of each
  // q/k/v channel) left from the next row.
  const auto hp = testing::read_json(testing::fixtures_dir() / "tiny-qwen35.ref.json")["hparams"];
  const auto channels = 2 * hp["ssm_groups"].get<size_t>() * hp["ssm_state"].get<size_t>() +
                        hp["ssm_inner_size"].get<size_t>();
  const size_t conv_floats = (hp["ssm_conv"].get<size_t>() - 1) * channels;
  for (size_t layer = 0; layer < planted.size(); ++layer) {
    if (planted[layer].empty()) continue;
    std::copy_n(other[layer].begin(), conv_floats, planted[layer].begin());
  }
  EXPECT_NE(first_difference(planted, expected), "");
  // And the converse: the window right, S from the next row.
  planted = verified(keep);
  for (size_t layer = 0; layer < planted.size(); ++layer) {
    if (planted[layer].empty()) continue;
    std::copy(other[layer].begin() + conv_floats, other[layer].end(),
              planted[layer].begin() + conv_floats);
  }
  EXPECT_NE(first_difference(planted, expected), "");
}

// A layer-skip drafter's cache of the first two layers (both recurrent) runs a prefix forward.
TEST(RecurrentCommit, LayerSkipCacheHoldsTheHybridPrefix) {
  ModelSession s(tiny());
  ModelCache shallow(*s.model, {.capacity = 64, .n_layers = 2});
  ASSERT_EQ(shallow.n_layers(), 2);
  EXPECT_EQ(shallow.layer_cache(0).kind, model::LayerCache::Kind::kRecurrent);
  std::vector<float> logits(static_cast<size_t>(s.n_vocab()));
  s.eval.forward_last(kPrompt, shallow.memory(), logits.data(), 2);
  shallow.commit(static_cast<int64_t>(kPrompt.size()));
  // The same two layers' states as the full model's cache after the same tokens.
  (void)s.last_logits(kPrompt);
  const auto full = recurrent_states(s.cache);
  const auto prefix = recurrent_states(shallow);
  for (size_t layer = 0; layer < prefix.size(); ++layer) {
    EXPECT_EQ(prefix[layer], full[layer]) << "layer " << layer;
  }
}

}  // namespace
}  // namespace augur::cache
