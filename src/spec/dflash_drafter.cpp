#include "spec/dflash_drafter.h"

#include <algorithm>

#include "common/error.h"
#include "spec/draft_sampling.h"
#include "spec/token_prefix.h"

namespace augur::spec {
DFlashDrafter::DFlashDrafter(const model::heads::DFlash& head, kernels::ThreadPool& pool,
                             int64_t n_ctx, int64_t ubatch, cache::CacheTypes types)
    : head_(head),
      pool_(pool),
      cache_(head, {.capacity = n_ctx,
                    .max_batch = std::max(ubatch, head.block_size()),
                    .type_k = types.k,
                    .type_v = types.v}),
      eval_(head, pool, ubatch, n_ctx),
      block_ws_(head.make_workspace(head.block_size(), n_ctx)),
      block_logits_(static_cast<size_t>(head.block_size() * head.hparams().n_vocab)),
      logits_(static_cast<size_t>(head.hparams().n_vocab)) {}

void DFlashDrafter::take_features(int64_t first, int64_t n, int64_t n_embd, const float* features) {
  AUGUR_CHECK(n_embd == head_.hparams().n_embd, "features of the target the drafter was made for");
  const int64_t W = head_.hidden_in_width();
  const int64_t held = static_cast<int64_t>(features_.size()) / W;
  if (first < features_first_ || first > features_first_ + held) {  // a new start, or a gap
    features_.clear();
    features_first_ = first;
  }
  features_.resize(static_cast<size_t>((first - features_first_ + n) * W));
  std::copy(features, features + n * W, features_.begin() + (first - features_first_) * W);
}

int64_t DFlashDrafter::reusable_prefix(std::span<const int32_t> prompt) const {
  // Row P was injected from features of t_0..t_P: it is right while those tokens agree.
  return std::min(common_prefix(row_tokens_, prompt), cache_.size());
}

void DFlashDrafter::sync(std::span<const int32_t> context, int64_t end) {
  AUGUR_CHECK(cache_.pending() == 0, "a drafter syncs only between cycles");
  const int64_t keep = reusable_prefix(context);
  if (keep < cache_.size()) cache_.truncate(keep);
  row_tokens_.resize(static_cast<size_t>(keep));
  const int64_t n = end - keep;
  if (n <= 0) return;
  const int64_t W = head_.hidden_in_width();
  AUGUR_CHECK(keep >= features_first_ &&
                  (end - features_first_) * W <= static_cast<int64_t>(features_.size()),
              "the target's features of every committed row reach a DFlash drafter");
  positions_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    positions_[static_cast<size_t>(i)] = static_cast<int32_t>(keep + i);
  eval_.forward(context.subspan(static_cast<size_t>(keep), static_cast<size_t>(n)), positions_, {},
                cache_.memory(), nullptr, -1,
                {.hidden_in = features_.data() + (keep - features_first_) * W});
  cache_.commit(n);
  row_tokens_.assign(context.begin(), context.begin() + end);
  // Features below the injected rows are no longer needed.
  const int64_t drop = end - features_first_;
  features_.erase(features_.begin(), features_.begin() + drop * W);
  features_first_ = end;
}

void DFlashDrafter::begin(std::span<const int32_t> prompt) {
  if (cache_.pending() > 0) cache_.commit(0);
  // The target has run on every prompt token (the prefill), so every prompt row is injected.
  sync(prompt, static_cast<int64_t>(prompt.size()));
}

void DFlashDrafter::reset() {
  if (cache_.pending() > 0) cache_.commit(0);
  cache_.clear();
  row_tokens_.clear();
  features_.clear();
  features_first_ = 0;
}

void DFlashDrafter::propose(const DraftRequest& request, Draft& out) {
  out.clear();
  AUGUR_CHECK(!request.context.empty() && request.sampler && request.rng,
              "a draft request has a context, a sampler and an RNG");
  const auto context = request.context;
  const auto n_past = static_cast<int64_t>(context.size()) - 1;  // rows the target has run on
  sync(context, n_past);
  const int k = std::min<int>(request.k_max, static_cast<int>(head_.block_size() - 1));
  if (k <= 0) return;
  block_tokens_.assign(static_cast<size_t>(k + 1), head_.mask_token());
  block_tokens_[0] = context.back();
  // Rows 1..k only: row j is q_j.
  head_.block(block_tokens_, cache_.memory(), *block_ws_, block_logits_.data(), pool_, 1);

  const auto V = static_cast<size_t>(head_.hparams().n_vocab);
  std::copy_n(block_logits_.begin(), V, logits_.begin());
  DraftRequest clamped = request;
  clamped.k_max = k;
  draft_token_by_token(clamped, logits_, history_, out, [&](int32_t /*token*/) {
    // Row j + 1 of the block: the same forward, whatever d_j was.
    std::copy_n(block_logits_.begin() + out.tokens.size() * V, V, logits_.begin());
  });
}

void DFlashDrafter::observe(int n_accepted) {
  AUGUR_CHECK(n_accepted >= 0, "accepted count is non-negative");
  // Nothing to commit: the block never entered the cache; the rows the target keeps arrive as
  // features and are injected at the next proposal.
}

int64_t DFlashDrafter::memory_bytes() const {
  const auto vector_bytes = [](const auto& v) {
    return static_cast<int64_t>(v.capacity() * sizeof(v[0]));
  };
  // Buffers sized at construction; the held features (one verify's rows, or a prompt's) are left
  // out like the token lists, so the figure is the same for every run.
  return static_cast<int64_t>(head_.file().file_size()) + cache_.bytes() + eval_.bytes() +
         block_ws_->bytes() + vector_bytes(block_logits_) + vector_bytes(logits_);
}

}  // namespace augur::spec
