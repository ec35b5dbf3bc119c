// Runs one Model over any number of tokens by splitting them into ubatches, so no activation
// or score buffer scales with the whole prompt. Holds the session's scratch; one thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "model/forward_batcher.h"
#include "model/model.h"

namespace augur::model {

// What a forward reads or hands out per row besides tokens and logits (drafters that read the
// target, and drafter heads). Default: nothing.
struct RowExtras {
  // Feature capture (UbatchRequest::capture_layers): after each ubatch, `on_features` gets its
  // rows' features, rows [first_row, first_row + n_rows) of the call, [n_rows, taps, n_embd].
  std::span<const int32_t> capture_layers;
  std::function<void(int64_t first_row, int64_t n_rows, const float* features)> on_features;
  const float* hidden_in = nullptr;  // [M, model.hidden_in_width()]
  float* hidden_out = nullptr;       // [M, n_embd]
};

class Evaluator {
 public:
  // ubatch: max rows per forward_ubatch; n_ctx: the longest memory this session will use.
  Evaluator(const Model& model, kernels::ThreadPool& pool, int64_t ubatch, int64_t n_ctx);

  // Evaluates tokens[M] at positions[M] on top of `memory` (appending M rows) and writes the
  // logits of the rows listed in `out_rows` (ascending indexes into tokens) to
  // logits [out_rows.size(), n_vocab]. n_layers < 0 runs every layer.
  void forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
               std::span<const int32_t> out_rows, Memory& memory, float* logits, int n_layers = -1,
               const RowExtras& extras = {});

  // Convenience: positions memory.n_rows().., logits of the last row only (decode / prefill).
  void forward_last(std::span<const int32_t> tokens, Memory& memory, float* logits,
                    int n_layers = -1, const RowExtras& extras = {});

  // Routes every ubatch through `batcher` (its model must be this one), to be combined with
  // other sessions' forwards; null: run alone.
  void set_batcher(ForwardBatcher* batcher);
  ForwardBatcher* batcher() const { return batcher_; }
  // Batched: the seconds of the last forward() this session is to pay (ForwardBatcher::cost_of,
  // over its ubatches); -1 when it ran alone (its wall time is the cost).
  double last_forward_cost_s() const { return batcher_ ? last_cost_s_ : -1; }

  const Model& model() const { return model_; }
  kernels::ThreadPool& pool() { return pool_; }
  int64_t ubatch() const { return ubatch_; }
  // Bytes of its workspace (not the model's weights, not the memory it runs on); made at the
  // first forward that does not go through a batcher, 0 before.
  int64_t bytes() const;

 private:
  const Model& model_;
  kernels::ThreadPool& pool_;
  int64_t ubatch_;
  int64_t n_ctx_;
  std::unique_ptr<Workspace> workspace_;
  ForwardBatcher* batcher_ = nullptr;
  double last_cost_s_ = 0;
  std::vector<int32_t> positions_;  // scratch for forward_last
  std::vector<int32_t> ub_rows_;    // out_rows of one ubatch, rebased
  std::vector<float> features_;     // [ubatch, taps, n_embd] when capturing
};

}  // namespace augur::model
