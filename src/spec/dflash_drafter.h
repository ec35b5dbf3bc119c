// `--draft dflash -md FILE`: drafts a whole block in one forward of a DFlash drafter
// (model/heads/dflash.h). Its cache row P is injected from the target's features of row P, so
// after every cycle it holds exactly the committed tokens the target has run on: every context
// token but the newest (the carry, id_last).
//
// A proposal injects the committed rows it lacks (the rows the last verify kept, or the
// prompt's), then evaluates the block [id_last, MASK × n] at the next positions,
// n = min(k_max, block_size - 1); block row j's distribution is q_j, and d_j is drawn from it
// with the session's sampler (argmax when greedy). q_j does not depend on d_1..d_{j-1}: a proposal
// distribution may ignore them, and Leviathan-Chen acceptance stays exact.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "model/evaluator.h"
#include "model/heads/dflash.h"
#include "spec/draft_source.h"

namespace augur::spec {

class DFlashDrafter final : public DraftSource {
 public:
  // n_ctx: the longest context (committed + block) it sees; `types`: its cache's K/V row types.
  DFlashDrafter(const model::heads::DFlash& head, kernels::ThreadPool& pool, int64_t n_ctx,
                int64_t ubatch, cache::CacheTypes types = {});

  std::string name() const override { return "dflash"; }
  std::span<const int32_t> feature_layers() const override { return head_.target_layers(); }
  void take_features(int64_t first, int64_t n, int64_t n_embd, const float* features) override;
  int64_t reusable_prefix(std::span<const int32_t> prompt) const override;
  void begin(std::span<const int32_t> prompt) override;
  void reset() override;
  void propose(const DraftRequest& request, Draft& out) override;
  void observe(int n_accepted) override;
  int64_t memory_bytes() const override;

  // For tests: its cache, and the tokens its rows were injected for (one per row).
  const cache::ModelCache& cache() const { return cache_; }
  const std::vector<int32_t>& row_tokens() const { return row_tokens_; }

 private:
  // Keeps the rows whose tokens agree with `context`, then injects rows up to `end` (exclusive)
  // from the held features and commits them.
  void sync(std::span<const int32_t> context, int64_t end);

  const model::heads::DFlash& head_;
  kernels::ThreadPool& pool_;
  cache::ModelCache cache_;
  model::Evaluator eval_;
  std::unique_ptr<model::Workspace> block_ws_;
  std::vector<int32_t> row_tokens_;
  int64_t features_first_ = 0;   // position of features_' first row
  std::vector<float> features_;  // [positions, taps * n_embd] not yet injected
  std::vector<int32_t> history_, block_tokens_, positions_;  // scratch
  std::vector<float> block_logits_;                          // [block_size, n_vocab]
  std::vector<float> logits_;                                // [n_vocab] the current draft row
};

}  // namespace augur::spec
