// A drafter head that runs over pairs (a token, a hidden state of the target) with a KV cache of
// its own and, when drafting past what the target has seen, feeds its own output hidden state
// back in place of the target's: EAGLE-3 (model/heads/eagle3.h: three taps fused by fc) and
// MTP / NextN layers (model/heads/nextn.h: the target's final hidden state). spec/
// pair_head_drafter.h drives either.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/thread_pool.h"
#include "model/model.h"

namespace augur::model::heads {

class PairHead : public Model {
 public:
  // "eagle3" or "mtp": the drafter's name.
  virtual std::string_view kind() const = 0;
  // The target layers it reads (the feature taps), in concatenation order.
  virtual std::span<const int32_t> target_layers() const = 0;
  // The target's hidden size, the width of each tap.
  virtual int64_t target_hidden() const = 0;
  // The hidden input of `rows` rows ([rows, hidden_in_width()]) from their features
  // [rows, taps, target_hidden].
  virtual void fuse(const float* features, int64_t rows, float* hidden,
                    kernels::ThreadPool& pool) const = 0;
  // The RoPE position of the pair (t_{P+1}, hidden of row P) is P + position_offset(): EAGLE-3
  // puts it at P, an MTP layer at P + 1 (its input at position p is (t_p, h_{p-1})).
  virtual int32_t position_offset() const = 0;
  // Bytes of the weights that are its own (memory figures): the whole file of a separate head,
  // only its own tensors for a layer inside the target's file.
  virtual int64_t weight_bytes() const { return static_cast<int64_t>(file().file_size()); }
};

}  // namespace augur::model::heads
