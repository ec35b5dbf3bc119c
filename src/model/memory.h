// What a forward pass needs from a cache: room for the batch's new K/V rows and read access
// to every row it may attend to. cache/ implements this (and the commit/truncate transaction
// on top); model/ never sees how rows are committed or rolled back.
#pragma once

#include <cstdint>

namespace augur::model {

class Memory {
 public:
  virtual ~Memory() = default;
  // Rows visible to attention before the next batch (committed + pending).
  virtual int64_t n_rows() const = 0;
  // Maximum rows this memory can hold.
  virtual int64_t capacity() const = 0;
  // Start of layer `layer`, kv head `head` keys; rows are head_dim floats apart. [capacity,
  // head_dim]
  virtual float* keys(int layer, int head) = 0;
  virtual float* values(int layer, int head) = 0;
  // The batch's `n` rows (at n_rows() .. n_rows()+n-1) are written for every layer: make them
  // visible.
  virtual void advance(int64_t n) = 0;
};

}  // namespace augur::model
