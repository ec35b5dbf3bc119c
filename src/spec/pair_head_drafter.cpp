#include "spec/pair_head_drafter.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "spec/draft_sampling.h"
#include "spec/token_prefix.h"

namespace augur::spec {
PairHeadDrafter::PairHeadDrafter(const model::heads::PairHead& head, kernels::ThreadPool& pool,
                                 int64_t n_ctx, int64_t ubatch, cache::CacheTypes types)
    : head_(head),
      pool_(pool),
      cache_(head, {.capacity = n_ctx, .max_batch = ubatch, .type_k = types.k, .type_v = types.v}),
      eval_(head, pool, ubatch, n_ctx),
      logits_(static_cast<size_t>(head.hparams().n_vocab)),
      y_(static_cast<size_t>(head.hidden_in_width())),
      y_next_(y_.size()) {}

void PairHeadDrafter::take_features(int64_t first, int64_t n, int64_t n_embd,
                                    const float* features) {
  AUGUR_CHECK(n_embd == head_.target_hidden(), "features of the target the head was made for");
  const int64_t D = head_.hidden_in_width();
  const int64_t held = static_cast<int64_t>(g_.size()) / D;
  if (first < g_first_ || first > g_first_ + held) {  // a new start, or a gap: begin afresh
    g_.clear();
    g_first_ = first;
  }
  g_.resize(static_cast<size_t>((first - g_first_ + n) * D));
  head_.fuse(features, n, g_.data() + (first - g_first_) * D, pool_);
}

const float* PairHeadDrafter::g_at(int64_t position) const {
  const int64_t D = head_.hidden_in_width();
  AUGUR_CHECK(
      position >= g_first_ && (position - g_first_ + 1) * D <= static_cast<int64_t>(g_.size()),
      "the target's features of every committed row reach a pair-head drafter");
  return g_.data() + (position - g_first_) * D;
}

int64_t PairHeadDrafter::reusable_prefix(std::span<const int32_t> prompt) const {
  // Row P needs t_0..t_{P+1}: rows below common - 1 are still right.
  const int64_t common = common_prefix(pair_tokens_, prompt);
  return std::clamp<int64_t>(common - 1, 0, cache_.size());
}

int64_t PairHeadDrafter::sync(std::span<const int32_t> context) {
  AUGUR_CHECK(cache_.pending() == 0, "a drafter syncs only between cycles");
  const int64_t keep = reusable_prefix(context);
  if (keep < cache_.size()) cache_.truncate(keep);
  pair_tokens_.resize(keep > 0 ? static_cast<size_t>(keep + 1) : 0);
  return keep;
}

void PairHeadDrafter::catch_up(std::span<const int32_t> context, int64_t last) {
  const int64_t rows = cache_.size() + cache_.pending();
  const int64_t n = last - rows + 1;
  AUGUR_CHECK(n >= 1, "a pair-head catch-up evaluates at least one pair");
  tokens_.assign(context.begin() + rows + 1, context.begin() + last + 2);
  positions_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    positions_[static_cast<size_t>(i)] = static_cast<int32_t>(rows + i) + head_.position_offset();
  out_row_.assign(1, static_cast<int32_t>(n - 1));
  const int64_t D = head_.hparams().n_embd;
  y_all_.resize(static_cast<size_t>(n * D));
  const float* g = g_at(rows);
  (void)g_at(last);  // every row's g is held, contiguously
  eval_.forward(tokens_, positions_, out_row_, cache_.memory(), logits_.data(), -1,
                {.hidden_in = g, .hidden_out = y_all_.data()});
  std::copy(y_all_.end() - D, y_all_.end(), y_.begin());
}

void PairHeadDrafter::begin(std::span<const int32_t> prompt) {
  n_catchup_ = 0;
  if (cache_.pending() > 0) cache_.commit(0);  // a proposal the last session never observed
  sync(prompt);
  // Pairs of every prompt row but the last (its successor is the first generated token).
  const int64_t last = static_cast<int64_t>(prompt.size()) - 2;
  if (last < cache_.size()) return;
  catch_up(prompt, last);
  cache_.commit(last - cache_.size() + 1);
  pair_tokens_.assign(prompt.begin(), prompt.begin() + last + 2);
}

void PairHeadDrafter::reset() {
  if (cache_.pending() > 0) cache_.commit(0);
  cache_.clear();
  pair_tokens_.clear();
  g_.clear();
  g_first_ = 0;
  n_catchup_ = 0;
}

void PairHeadDrafter::propose(const DraftRequest& request, Draft& out) {
  out.clear();
  n_catchup_ = 0;
  AUGUR_CHECK(!request.context.empty() && request.sampler && request.rng,
              "a draft request has a context, a sampler and an RNG");
  if (request.k_max <= 0) return;
  const auto context = request.context;
  sync(context);
  // The target has the features of every context token but the last (the carry).
  const int64_t last = static_cast<int64_t>(context.size()) - 2;
  if (last < cache_.size()) return;  // nothing to condition on yet (a one-token context)
  catch_up(context, last);
  n_catchup_ = last - cache_.size() + 1;

  draft_token_by_token(request, logits_, history_, out, [&](int32_t token) {
    // (d_i, its own y) at the next position: the target has no features for d_i.
    const auto position = static_cast<int32_t>(last + static_cast<int64_t>(out.tokens.size())) +
                          head_.position_offset();
    const int32_t row = 0;
    eval_.forward(std::span<const int32_t>(&token, 1), std::span<const int32_t>(&position, 1),
                  std::span<const int32_t>(&row, 1), cache_.memory(), logits_.data(), -1,
                  {.hidden_in = y_.data(), .hidden_out = y_next_.data()});
    std::swap(y_, y_next_);
  });
  pair_tokens_.assign(context.begin(), context.end());
}

void PairHeadDrafter::observe(int n_accepted) {
  AUGUR_CHECK(n_accepted >= 0, "accepted count is non-negative");
  // Only the catch-up rows are pairs of committed tokens with the target's features.
  cache_.commit(n_catchup_);
  if (n_catchup_ == 0) pair_tokens_.resize(cache_.size() > 0 ? cache_.size() + 1 : 0);
  n_catchup_ = 0;
  // g below the committed rows is no longer needed.
  const int64_t D = head_.hidden_in_width();
  const int64_t drop =
      std::clamp<int64_t>(cache_.size() - g_first_, 0, static_cast<int64_t>(g_.size()) / D);
  g_.erase(g_.begin(), g_.begin() + drop * D);
  g_first_ += drop;
}

int64_t PairHeadDrafter::memory_bytes() const {
  const auto vector_bytes = [](const auto& v) {
    return static_cast<int64_t>(v.capacity() * sizeof(v[0]));
  };
  // Buffers sized at construction; g_ and y_all_ hold the rows of one catch-up (a prompt's, or
  // a verify's) and are left out like the token lists, so the figure is the same for every run.
  return head_.weight_bytes() + cache_.bytes() + eval_.bytes() + vector_bytes(logits_) +
         vector_bytes(y_) + vector_bytes(y_next_);
}

}  // namespace augur::spec
