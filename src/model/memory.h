// What a forward pass needs from a cache. Each layer keeps what later rows need in one of two
// ways, which the model declares (LayerCache):
//   attention: K/V rows, stored as the cache's key/value types, either every row or — for a
//     sliding-window layer — a ring of slots that outlives the window by the rows a batch or a
//     rollback may add;
//   recurrent: a fixed-size state carried from row to row (Gated DeltaNet's matrix state and conv
//     window), kept after each pending row so a rollback can install the state after any of them.
// cache/ implements this (and the commit/truncate transaction on top); model/ never sees how rows
// are committed or rolled back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "gguf/types.h"

namespace augur::model {

// How one layer keeps its past (declared by the model, per layer).
struct LayerCache {
  enum class Kind { kAttention, kRecurrent };
  Kind kind = Kind::kAttention;
  int64_t window = 0;        // attention: 0 = every row; w = a row sees itself and w - 1 before
  int64_t state_floats = 0;  // recurrent: floats of the state carried from row to row

  static LayerCache attention(int64_t window = 0) { return {Kind::kAttention, window, 0}; }
  static LayerCache recurrent(int64_t state_floats) { return {Kind::kRecurrent, 0, state_floats}; }
  bool operator==(const LayerCache&) const = default;
};

// One attention layer's K/V rows as stored: kv head h's row r sits in slot r % slots, at
// k + (h * slots + slot) * k_row_bytes (v likewise). A full layer has slots == capacity; a
// sliding-window ring has fewer, and a row's slot is reused once no later row can see it.
struct KvRows {
  gguf::TensorType k_type = gguf::TensorType::F32;
  gguf::TensorType v_type = gguf::TensorType::F32;
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  size_t k_row_bytes = 0, v_row_bytes = 0;
  int64_t slots = 0;
  int64_t window = 0;  // as LayerCache::window

  uint8_t* key(int64_t head, int64_t row) const {
    return k + (static_cast<size_t>(head) * slots + static_cast<size_t>(row % slots)) * k_row_bytes;
  }
  uint8_t* value(int64_t head, int64_t row) const {
    return v + (static_cast<size_t>(head) * slots + static_cast<size_t>(row % slots)) * v_row_bytes;
  }
  // The first row `row` may attend to.
  int64_t first_visible(int64_t row) const {
    return window > 0 && row >= window ? row - window + 1 : 0;
  }
};

class Memory {
 public:
  virtual ~Memory() = default;
  // Rows visible to the next batch (committed + pending).
  virtual int64_t n_rows() const = 0;
  // Maximum rows this memory can hold.
  virtual int64_t capacity() const = 0;
  // Most rows one forward may add (a sliding-window ring has room for the window plus these).
  virtual int64_t max_batch() const = 0;
  // Layers and kv heads it holds rows for (a layer-skip drafter's memory holds fewer layers than
  // the model has).
  virtual int n_layers() const = 0;
  virtual int n_heads() const = 0;
  virtual LayerCache layer_cache(int layer) const = 0;

  // An attention layer's rows. A layer it does not hold, or a recurrent one, is a caller's bug
  // (say, a forward over more layers than a layer-skip memory keeps): it stops here instead of
  // writing past the rows.
  KvRows kv(int layer) {
    check_layer(layer, LayerCache::Kind::kAttention);
    return layer_kv(layer);
  }
  // A recurrent layer's state after the first `rows` rows: readable for rows in
  // [committed, n_rows()], writable for rows in (n_rows(), n_rows() + max_batch()] while a
  // forward computes them (before advance). [state_floats]
  float* state(int layer, int64_t rows) {
    check_layer(layer, LayerCache::Kind::kRecurrent);
    return layer_state(layer, rows);
  }
  // The batch's `n` rows (at n_rows() .. n_rows()+n-1) are written for every layer: make them
  // visible.
  virtual void advance(int64_t n) = 0;

 protected:
  virtual KvRows layer_kv(int layer) = 0;
  virtual float* layer_state(int layer, int64_t rows) = 0;

 private:
  void check_layer(int layer, LayerCache::Kind kind) const {
    AUGUR_CHECK(layer >= 0 && layer < n_layers(), "memory read/write of a layer it does not hold");
    AUGUR_CHECK(layer_cache(layer).kind == kind, "memory access of a layer of another kind");
  }
};

}  // namespace augur::model
