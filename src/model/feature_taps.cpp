#include "model/feature_taps.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace augur::model {

FeatureTaps::FeatureTaps(const UbatchRequest& request, int n_layer, int n_run)
    : layers_(request.capture_layers), features_(request.features) {
  if (layers_.empty()) return;
  AUGUR_CHECK(features_ != nullptr, "feature taps come with a buffer");
  for (const int32_t layer : layers_) {
    if (layer < 0 || layer > n_layer) {
      throw InvalidArgument(fmt::format(
          "feature tap {} is outside the target's layers 0..{} ({} = the final hidden state)",
          layer, n_layer, n_layer));
    }
    if (layer < n_layer && layer >= n_run) {
      throw InvalidArgument(
          fmt::format("feature tap {} is past the {} layers this forward runs", layer, n_run));
    }
    if (layer == n_layer && n_run < n_layer) {
      throw InvalidArgument("the final hidden state is not reached by a shortened forward");
    }
  }
}

bool FeatureTaps::wants(int layer) const {
  return std::find(layers_.begin(), layers_.end(), layer) != layers_.end();
}

void FeatureTaps::capture(int layer, const float* x, int64_t M, int64_t n_embd) const {
  const auto n_taps = static_cast<int64_t>(layers_.size());
  for (int64_t t = 0; t < n_taps; ++t) {
    if (layers_[static_cast<size_t>(t)] != layer) continue;
    for (int64_t row = 0; row < M; ++row) {
      std::copy(x + row * n_embd, x + (row + 1) * n_embd, features_ + (row * n_taps + t) * n_embd);
    }
  }
}

}  // namespace augur::model
