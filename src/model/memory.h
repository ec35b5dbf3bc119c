// What a forward pass needs from a cache: room for the batch's new K/V rows and read access
// to every row it may attend to. cache/ implements this (and the commit/truncate transaction
// on top); model/ never sees how rows are committed or rolled back.
#pragma once

#include <cstdint>

#include "common/error.h"

namespace augur::model {

class Memory {
 public:
  virtual ~Memory() = default;
  // Rows visible to attention before the next batch (committed + pending).
  virtual int64_t n_rows() const = 0;
  // Maximum rows this memory can hold.
  virtual int64_t capacity() const = 0;
  // Layers and kv heads it holds rows for (a layer-skip drafter's memory holds fewer layers than
  // the model has).
  virtual int n_layers() const = 0;
  virtual int n_heads() const = 0;
  // Start of layer `layer`, kv head `head` keys; rows are head_dim floats apart. [capacity,
  // head_dim]. A layer or head the memory does not hold is a caller's bug (say, a forward over
  // more layers than a layer-skip memory keeps): it stops here instead of writing past the rows.
  float* keys(int layer, int head) {
    check_slot(layer, head);
    return layer_keys(layer, head);
  }
  float* values(int layer, int head) {
    check_slot(layer, head);
    return layer_values(layer, head);
  }
  // The batch's `n` rows (at n_rows() .. n_rows()+n-1) are written for every layer: make them
  // visible.
  virtual void advance(int64_t n) = 0;

 protected:
  // keys() / values() after the bounds check: 0 <= layer < n_layers(), 0 <= head < n_heads().
  virtual float* layer_keys(int layer, int head) = 0;
  virtual float* layer_values(int layer, int head) = 0;

 private:
  void check_slot(int layer, int head) const {
    AUGUR_CHECK(layer >= 0 && layer < n_layers(), "memory read/write of a layer it does not hold");
    AUGUR_CHECK(head >= 0 && head < n_heads(), "memory read/write of a kv head it does not hold");
  }
};

}  // namespace augur::model
