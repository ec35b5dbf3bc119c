#include "spec/model_drafter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "model/forward_batcher.h"
#include "spec/draft_sampling.h"

namespace augur::spec {
namespace {

int checked_layers(const model::Model& model, int n_layers) {
  const auto n_layer = static_cast<int>(model.hparams().n_layer);
  if (n_layers == -1) return -1;
  if (n_layers < 1 || n_layers > n_layer) {
    throw InvalidArgument(fmt::format(
        "layer-skip draft depth {} is out of range: the model has {} layers (use 1..{})", n_layers,
        n_layer, n_layer));
  }
  return n_layers;
}

}  // namespace

ModelDrafter::ModelDrafter(const model::Model& model, kernels::ThreadPool& pool, int64_t n_ctx,
                           int64_t ubatch, int n_layers, cache::CacheTypes types)
    : model_(model),
      n_layers_(checked_layers(model, n_layers)),
      cache_(model, {.capacity = n_ctx,
                     .max_batch = ubatch,
                     .n_layers = n_layers_,
                     .type_k = types.k,
                     .type_v = types.v}),
      eval_(model, pool, ubatch, n_ctx),
      logits_(static_cast<size_t>(model.hparams().n_vocab)) {}

int64_t ModelDrafter::sync(std::span<const int32_t> context, int64_t max_keep) {
  AUGUR_CHECK(cache_.pending() == 0, "a drafter syncs only between cycles");
  const auto common = static_cast<int64_t>(
      std::mismatch(cached_.begin(), cached_.end(), context.begin(), context.end()).first -
      cached_.begin());
  int64_t keep = std::min(common, max_keep);
  if (!cache_.can_truncate(keep)) keep = 0;  // a recurrent state cannot go back: start over
  if (keep < static_cast<int64_t>(cached_.size())) {
    cache_.truncate(keep);
    cached_.resize(static_cast<size_t>(keep));
  }
  return keep;
}

void ModelDrafter::share_forwards(model::ForwardBatcherSet& batchers) {
  eval_.set_batcher(&batchers.get(model_, n_layers_));
}

void ModelDrafter::reset() {
  cache_.clear();
  cached_.clear();
  fed_.clear();
  n_catchup_ = 0;
}

void ModelDrafter::begin(std::span<const int32_t> prompt) {
  fed_.clear();
  n_catchup_ = 0;
  if (cache_.pending() > 0) cache_.commit(0);  // a proposal the last session never observed
  const int64_t keep = sync(prompt, static_cast<int64_t>(prompt.size()));
  const auto rest = prompt.subspan(static_cast<size_t>(keep));
  if (rest.empty()) return;
  positions_.resize(rest.size());
  for (size_t i = 0; i < rest.size(); ++i) positions_[i] = static_cast<int32_t>(keep + i);
  eval_.forward(rest, positions_, {}, cache_.memory(), nullptr, n_layers_);
  cache_.commit(static_cast<int64_t>(rest.size()));
  cached_.insert(cached_.end(), rest.begin(), rest.end());
}

void ModelDrafter::propose(const DraftRequest& request, Draft& out) {
  out.clear();
  fed_.clear();
  n_catchup_ = 0;
  AUGUR_CHECK(!request.context.empty() && request.sampler && request.rng,
              "a draft request has a context, a sampler and an RNG");
  if (request.k_max <= 0) return;
  // The last context token must be evaluated here: its row gives q1.
  const int64_t keep = sync(request.context, static_cast<int64_t>(request.context.size()) - 1);
  const auto catchup = request.context.subspan(static_cast<size_t>(keep));
  fed_.assign(catchup.begin(), catchup.end());
  n_catchup_ = static_cast<int64_t>(catchup.size());
  eval_.forward_last(catchup, cache_.memory(), logits_.data(), n_layers_);

  draft_token_by_token(request, logits_, history_, out, [&](int32_t token) {
    eval_.forward_last(std::span<const int32_t>(&token, 1), cache_.memory(), logits_.data(),
                       n_layers_);
    fed_.push_back(token);
  });
}

void ModelDrafter::observe(int n_accepted) {
  const int64_t n_fed_drafts = static_cast<int64_t>(fed_.size()) - n_catchup_;
  AUGUR_CHECK(n_accepted >= 0, "accepted count is non-negative");
  const int64_t keep = n_catchup_ + std::min<int64_t>(n_accepted, n_fed_drafts);
  cache_.commit(keep);
  cached_.insert(cached_.end(), fed_.begin(), fed_.begin() + keep);
  fed_.clear();
  n_catchup_ = 0;
}

int64_t ModelDrafter::memory_bytes() const {
  const auto vector_bytes = [](const auto& v) {
    return static_cast<int64_t>(v.capacity() * sizeof(v[0]));
  };
  // A layer-skip drafter reads the target's own weights: only a separate draft model is its own.
  const int64_t weights = n_layers_ < 0 ? static_cast<int64_t>(model_.file().file_size()) : 0;
  // Buffers sized at construction; token lists that grow with the text are left out.
  return weights + cache_.bytes() + eval_.bytes() + vector_bytes(logits_);
}

}  // namespace augur::spec
