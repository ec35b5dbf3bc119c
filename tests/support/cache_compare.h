// Whether two memories hold the same past, read through model::Memory (so a test-side cache with
// a planted defect is read the same way as the real one): for rows [0, n), every K/V row an
// attention layer lets a later row see (all of them, or a sliding window's last rows) byte for
// byte, and every recurrent layer's state after row n, bit for bit.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "model/memory.h"

namespace augur::testing {

// Empty when equal; else names the first difference. Both memories must hold n rows.
inline std::string first_cache_difference(model::Memory& got, model::Memory& want, int64_t n) {
  if (got.n_layers() != want.n_layers()) return "layer counts differ";
  if (got.n_rows() < n || want.n_rows() < n) return "fewer than n rows held";
  for (int layer = 0; layer < got.n_layers(); ++layer) {
    const model::LayerCache spec = got.layer_cache(layer);
    if (!(spec == want.layer_cache(layer))) {
      return "layer " + std::to_string(layer) + ": kinds differ";
    }
    const std::string where = "layer " + std::to_string(layer);
    if (spec.kind == model::LayerCache::Kind::kRecurrent) {
      if (std::memcmp(got.state(layer, n), want.state(layer, n),
                      sizeof(float) * static_cast<size_t>(spec.state_floats)) != 0) {
        return where + ": recurrent state after row " + std::to_string(n);
      }
      continue;
    }
    const model::KvRows a = got.kv(layer), b = want.kv(layer);
    if (a.k_row_bytes != b.k_row_bytes || a.v_row_bytes != b.v_row_bytes) {
      return where + ": row sizes differ";
    }
    for (int head = 0; head < got.n_heads(); ++head) {
      for (int64_t row = a.first_visible(n); row < n; ++row) {
        const std::string at =
            where + " head " + std::to_string(head) + " row " + std::to_string(row);
        if (std::memcmp(a.key(head, row), b.key(head, row), a.k_row_bytes) != 0) {
          return at + ": key";
        }
        if (std::memcmp(a.value(head, row), b.value(head, row), a.v_row_bytes) != 0) {
          return at + ": value";
        }
      }
    }
  }
  return "";
}

// A copy of a memory's first n rows as first_cache_difference reads them (the K/V rows a later
// row may see; a recurrent layer's state after row n), readable through model::Memory: a cache
// as it was after some cycle, to compare later with a reference built once for a longer run.
class FrozenMemory final : public model::Memory {
 public:
  FrozenMemory(model::Memory& m, int64_t n) : n_(n), heads_(m.n_heads()) {
    for (int layer = 0; layer < m.n_layers(); ++layer) {
      Layer& l = layers_.emplace_back();
      l.spec = m.layer_cache(layer);
      if (l.spec.kind == model::LayerCache::Kind::kRecurrent) {
        const float* s = m.state(layer, n);
        l.state.assign(s, s + l.spec.state_floats);
        continue;
      }
      const model::KvRows kv = m.kv(layer);
      l.rows = kv;
      l.rows.slots = std::max<int64_t>(n, 1);
      l.k.resize(static_cast<size_t>(heads_ * l.rows.slots) * kv.k_row_bytes);
      l.v.resize(static_cast<size_t>(heads_ * l.rows.slots) * kv.v_row_bytes);
      const model::KvRows copy = rows_of(l);
      for (int head = 0; head < heads_; ++head) {
        for (int64_t row = kv.first_visible(n); row < n; ++row) {
          std::memcpy(copy.key(head, row), kv.key(head, row), kv.k_row_bytes);
          std::memcpy(copy.value(head, row), kv.value(head, row), kv.v_row_bytes);
        }
      }
    }
  }
  int64_t n_rows() const override { return n_; }
  int64_t capacity() const override { return n_; }
  int64_t max_batch() const override { return 0; }
  int n_layers() const override { return static_cast<int>(layers_.size()); }
  int n_heads() const override { return heads_; }
  model::LayerCache layer_cache(int layer) const override {
    return layers_[static_cast<size_t>(layer)].spec;
  }
  void advance(int64_t) override { AUGUR_CHECK(false, "a frozen memory takes no rows"); }

 protected:
  model::KvRows layer_kv(int layer) override {
    return rows_of(layers_[static_cast<size_t>(layer)]);
  }
  float* layer_state(int layer, int64_t rows) override {
    AUGUR_CHECK(rows == n_, "a frozen memory holds only the state after its last row");
    return layers_[static_cast<size_t>(layer)].state.data();
  }

 private:
  struct Layer {
    model::LayerCache spec;
    model::KvRows rows;
    std::vector<uint8_t> k, v;
    std::vector<float> state;
  };
  // Pointed at the copies on each read, so that a moved or copied FrozenMemory reads its own.
  static model::KvRows rows_of(Layer& l) {
    model::KvRows rows = l.rows;
    rows.k = l.k.data();
    rows.v = l.v.data();
    return rows;
  }
  int64_t n_;
  int heads_;
  std::vector<Layer> layers_;
};

// first_cache_difference for n rows of `got` against the first n of a longer `want`, which stands
// for a cache built over those n rows alone (causal attention and batch-invariant kernels make
// its prefix rows the same bytes). Only attention layers that keep every row have such a prefix:
// a recurrent state or a ring slot of row r is gone once later rows are in.
inline std::string first_prefix_difference(model::Memory& got, model::Memory& want, int64_t n) {
  for (int layer = 0; layer < want.n_layers(); ++layer) {
    const model::LayerCache spec = want.layer_cache(layer);
    if (spec.kind != model::LayerCache::Kind::kAttention || want.kv(layer).slots < want.n_rows()) {
      return "layer " + std::to_string(layer) + " keeps no prefix to compare with";
    }
  }
  return first_cache_difference(got, want, n);
}

}  // namespace augur::testing
