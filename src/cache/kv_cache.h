// Full (non-windowed) F32 KV cache: every row of every layer kept until truncated.
// Layout per layer and kv head: [capacity, head_dim], so attention streams contiguous rows.
#pragma once

#include <span>
#include <vector>

#include "cache/cache.h"
#include "model/hparams.h"

namespace augur::cache {

class KvCache final : public Cache, private model::Memory {
 public:
  // n_layers < 0: all layers of the model (a layer-skip drafter keeps fewer).
  KvCache(const model::HParams& hp, int64_t capacity, int n_layers = -1);

  int64_t size() const override { return committed_; }
  int64_t pending() const override { return pending_; }
  void commit(int64_t keep) override;
  void truncate(int64_t n) override;
  model::Memory& memory() override { return *this; }
  int64_t capacity() const override { return capacity_; }

  // Read-back for tests: the stored key / value row of (layer, kv head, row). [head_dim]
  std::span<const float> key_row(int layer, int head, int64_t row) const;
  std::span<const float> value_row(int layer, int head, int64_t row) const;
  int n_layers() const override { return n_layers_; }
  int n_heads() const override { return n_heads_; }
  // The first n committed rows of every layer, head, K and V: [n_layers, 2, n_heads, n, head_dim].
  // InvalidArgument if n > size().
  std::vector<float> save_rows(int64_t n) const;
  // Makes `rows` (as save_rows(n) wrote them, from a cache of the same shape) the committed
  // rows, dropping everything else. InvalidArgument if they do not fit or are not n rows.
  void restore_rows(std::span<const float> rows, int64_t n);
  // Bytes of one row across every layer, head, K and V.
  int64_t row_bytes() const {
    return static_cast<int64_t>(n_layers_) * 2 * n_heads_ * head_dim_ *
           static_cast<int64_t>(sizeof(float));
  }

  // Bytes of the K and V rows it holds room for.
  int64_t bytes() const { return static_cast<int64_t>(data_.capacity() * sizeof(float)); }

 private:
  int64_t n_rows() const override { return committed_ + pending_; }
  float* layer_keys(int layer, int head) override;
  float* layer_values(int layer, int head) override;
  void advance(int64_t n) override;
  size_t offset(int layer, int kind, int head) const;
  void check_row(int layer, int head, int64_t row) const;

  int n_layers_;
  int n_heads_;
  int64_t head_dim_;
  int64_t capacity_;
  int64_t committed_ = 0;
  int64_t pending_ = 0;
  std::vector<float> data_;  // [n_layers, 2 (k, v), n_heads, capacity, head_dim]
};

}  // namespace augur::cache
