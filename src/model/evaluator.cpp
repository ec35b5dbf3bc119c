#include "model/evaluator.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace augur::model {

Evaluator::Evaluator(const Model& model, kernels::ThreadPool& pool, int64_t ubatch, int64_t n_ctx)
    : model_(model), pool_(pool), ubatch_(ubatch), n_ctx_(n_ctx) {
  if (ubatch < 1) throw InvalidArgument(fmt::format("ubatch {} must be at least 1", ubatch));
  ub_rows_.reserve(static_cast<size_t>(ubatch));
}

void Evaluator::forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                        std::span<const int32_t> out_rows, Memory& memory, float* logits,
                        int n_layers, const RowExtras& extras) {
  AUGUR_CHECK(tokens.size() == positions.size(), "one position per token");
  const int64_t M = static_cast<int64_t>(tokens.size());
  const int64_t n_vocab = model_.hparams().n_vocab;
  const int64_t n_embd = model_.hparams().n_embd;
  const int64_t in_width = model_.hidden_in_width();
  const auto n_taps = static_cast<int64_t>(extras.capture_layers.size());
  if (n_taps > 0) features_.resize(static_cast<size_t>(std::min(ubatch_, M) * n_taps * n_embd));
  size_t next_out = 0;
  last_cost_s_ = 0;
  for (int64_t start = 0; start < M; start += ubatch_) {
    const int64_t len = std::min(ubatch_, M - start);
    ub_rows_.clear();
    const size_t first_out = next_out;
    while (next_out < out_rows.size() && out_rows[next_out] < start + len) {
      AUGUR_CHECK(out_rows[next_out] >= start, "out_rows ascending and within the batch");
      ub_rows_.push_back(static_cast<int32_t>(out_rows[next_out] - start));
      ++next_out;
    }
    UbatchRequest req;
    req.tokens = tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(len));
    req.positions = positions.subspan(static_cast<size_t>(start), static_cast<size_t>(len));
    req.out_rows = ub_rows_;
    req.logits = logits + static_cast<int64_t>(first_out) * n_vocab;
    req.n_layers = n_layers;
    if (n_taps > 0) {
      req.capture_layers = extras.capture_layers;
      req.features = features_.data();
    }
    if (extras.hidden_in) req.hidden_in = extras.hidden_in + start * in_width;
    if (extras.hidden_out) req.hidden_out = extras.hidden_out + start * n_embd;
    if (batcher_) {
      last_cost_s_ += batcher_->forward(req, memory);
    } else {
      // Made on first use: a session whose forwards all go through a batcher never needs it.
      if (!workspace_) workspace_ = model_.make_workspace(ubatch_, n_ctx_);
      model_.forward_ubatch(req, memory, *workspace_, pool_);
    }
    if (n_taps > 0 && extras.on_features) extras.on_features(start, len, features_.data());
  }
  AUGUR_CHECK(next_out == out_rows.size(), "every out_row within the batch");
}

void Evaluator::forward_last(std::span<const int32_t> tokens, Memory& memory, float* logits,
                             int n_layers, const RowExtras& extras) {
  const int64_t n_past = memory.n_rows();
  positions_.resize(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) positions_[i] = static_cast<int32_t>(n_past + i);
  const int32_t last = static_cast<int32_t>(tokens.size()) - 1;
  forward(tokens, positions_, std::span<const int32_t>(&last, 1), memory, logits, n_layers, extras);
}

void Evaluator::set_batcher(ForwardBatcher* batcher) {
  AUGUR_CHECK(!batcher || &batcher->model() == &model_, "a batcher runs the evaluator's model");
  AUGUR_CHECK(!batcher || batcher->max_rows() >= ubatch_, "the batcher fits a whole ubatch");
  batcher_ = batcher;
}

int64_t Evaluator::bytes() const {
  return workspace_ ? workspace_->bytes() : 0;
}

}  // namespace augur::model
