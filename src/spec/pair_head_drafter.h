// `--draft eagle3 -md FILE` and `--draft mtp`: drafts with a pair head (model/heads/pair_head.h):
// an EAGLE-3 head that reads three of the target's hidden states per committed token, or the
// target's own MTP / NextN layer that reads its final hidden state. Its cache row P holds the pair
// (t_{P+1}, g_P), g_P fused from the target's features of row P (for MTP: h_P itself); so after a
// cycle it can hold the rows of every committed token but the newest, whose successor is not known
// yet.
//
// A proposal: evaluate the pairs of the committed rows it lacks — (t_{P+1}, g_P) for the rows
// the last verify kept — in one forward; the last row gives q1, d1 is drawn from it with the
// session's sampler; then each further draft feeds (d_i, y) with y the head's own output of the
// previous step (the target has not seen d_i, so there is no g for it). observe() commits only
// the catch-up rows: the draft rows were built on the head's guesses, never on the target's
// features, and are rebuilt from real features next cycle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "model/evaluator.h"
#include "model/heads/pair_head.h"
#include "spec/draft_source.h"

namespace augur::spec {

class PairHeadDrafter final : public DraftSource {
 public:
  // n_ctx: the longest context (committed + draft) it sees; `types`: its cache's K/V row types.
  PairHeadDrafter(const model::heads::PairHead& head, kernels::ThreadPool& pool, int64_t n_ctx,
                  int64_t ubatch, cache::CacheTypes types = {});

  std::string name() const override { return std::string(head_.kind()); }
  std::span<const int32_t> feature_layers() const override { return head_.target_layers(); }
  void take_features(int64_t first, int64_t n, int64_t n_embd, const float* features) override;
  int64_t reusable_prefix(std::span<const int32_t> prompt) const override;
  void begin(std::span<const int32_t> prompt) override;
  void reset() override;
  void propose(const DraftRequest& request, Draft& out) override;
  void observe(int n_accepted) override;
  int64_t memory_bytes() const override;

  // For tests: its cache, and the tokens t_0..t_rows its rows were built from (empty or one
  // more than the rows).
  const cache::ModelCache& cache() const { return cache_; }
  const std::vector<int32_t>& pair_tokens() const { return pair_tokens_; }

 private:
  // Keeps the rows whose pairs agree with `context`; returns how many.
  int64_t sync(std::span<const int32_t> context);
  // Evaluates the pairs of rows [rows, last] from `context` (tokens) and the held g; writes the
  // logits of the last row to logits_ and its y to y_. Rows stay pending.
  void catch_up(std::span<const int32_t> context, int64_t last);
  const float* g_at(int64_t position) const;

  const model::heads::PairHead& head_;
  kernels::ThreadPool& pool_;
  cache::ModelCache cache_;
  model::Evaluator eval_;
  std::vector<int32_t> pair_tokens_;
  int64_t g_first_ = 0;           // position of g_'s first row
  std::vector<float> g_;          // [positions, n_embd] fused features not yet in a committed row
  int64_t n_catchup_ = 0;         // pending rows of the last proposal that are committed pairs
  std::vector<int32_t> history_;  // context + drafts so far (penalty history of each q)
  std::vector<int32_t> tokens_, positions_, out_row_;  // scratch
  std::vector<float> logits_;                          // [n_vocab]
  std::vector<float> y_all_;                           // [catch-up rows, n_embd] their y
  std::vector<float> y_, y_next_;                      // [n_embd] the head's last output
};

}  // namespace augur::spec
