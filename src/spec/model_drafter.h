// Drafts with a model of its own forward: a separate draft model (`-md`), or the target's first
// L layers + final norm + output head (layer-skip self-draft: no extra weights). Either way it
// keeps its own KV cache, committed and rolled back in step with the target's, so it never
// evaluates a committed token twice: after observe() its cache holds exactly a prefix of the
// committed tokens (all but the one or two it has not been shown yet).
//
// A proposal of k tokens: evaluate the committed tokens the cache lacks (the target's last
// token, and a fully accepted draft's last token), sample d1 from the last row with the session's
// sampler (q1 = that distribution), then feed d1 .. d_{k-1} one at a time for q2 .. qk. dk is
// never fed: if it is accepted, the next proposal feeds it with the target's bonus token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "model/evaluator.h"
#include "spec/draft_source.h"

namespace augur::spec {

class ModelDrafter final : public DraftSource {
 public:
  // n_layers = -1: every layer of `model`; otherwise its first n_layers (1 <= n_layers <=
  // n_layer, InvalidArgument otherwise). n_ctx: the longest context (committed + draft) it sees.
  // `types`: its cache's K/V row types (the target's).
  ModelDrafter(const model::Model& model, kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch,
               int n_layers = -1, cache::CacheTypes types = {});

  std::string name() const override { return n_layers_ < 0 ? "model" : "layerskip"; }
  void begin(std::span<const int32_t> prompt) override;
  void reset() override;
  void propose(const DraftRequest& request, Draft& out) override;
  void observe(int n_accepted) override;
  int64_t memory_bytes() const override;
  void share_forwards(model::ForwardBatcherSet& batchers) override;

  // For tests: the cache and the tokens whose rows it holds (committed rows only between cycles).
  const cache::ModelCache& cache() const { return cache_; }
  const std::vector<int32_t>& cached_tokens() const { return cached_; }

 private:
  // Drops cached rows past the longest common prefix with `context`, keeping at most
  // `max_keep` rows; returns how many remain.
  int64_t sync(std::span<const int32_t> context, int64_t max_keep);

  const model::Model& model_;
  int n_layers_;
  cache::ModelCache cache_;
  model::Evaluator eval_;
  std::vector<int32_t> cached_;     // tokens whose rows are committed in cache_
  std::vector<int32_t> fed_;        // tokens of the last proposal's pending rows, in order
  int64_t n_catchup_ = 0;           // of fed_, the leading committed tokens
  std::vector<int32_t> history_;    // context + drafts so far (penalty history of each q row)
  std::vector<int32_t> positions_;  // scratch
  std::vector<float> logits_;       // [n_vocab]
};

}  // namespace augur::spec
