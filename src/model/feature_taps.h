// Copies the hidden states a drafter asked for (UbatchRequest::capture_layers) out of a forward
// as it passes each tap; a forward that asks for none pays one empty-span test per layer.
#pragma once

#include <cstdint>
#include <span>

#include "model/model.h"

namespace augur::model {

class FeatureTaps {
 public:
  // n_layer: the model's layers (tap n_layer is the final normed hidden state); n_run: the
  // layers this forward runs. Throws InvalidArgument for a tap outside [0, n_layer] or one a
  // shortened forward never reaches, and AUGUR_CHECKs that taps come with a buffer.
  FeatureTaps(const UbatchRequest& request, int n_layer, int n_run);

  bool wants(int layer) const;
  // Rows [M, n_embd] at tap `layer` into features[row, tap index, :] (every index listing it).
  void capture(int layer, const float* x, int64_t M, int64_t n_embd) const;

 private:
  std::span<const int32_t> layers_;
  float* features_;
};

}  // namespace augur::model
