#include "model/model.h"

#include "common/error.h"

namespace augur::model {

std::vector<LayerCache> Model::cache_layout() const {
  return std::vector<LayerCache>(static_cast<size_t>(hparams().n_layer), LayerCache::attention());
}

void Model::forward_segments(const UbatchRequest& request, std::span<const MemorySegment> segments,
                             Workspace& workspace, kernels::ThreadPool& pool) const {
  if (segments.size() != 1) {
    throw Unsupported("this model runs one session per forward (no forward over several caches)");
  }
  AUGUR_CHECK(segments[0].first_row == 0 &&
                  segments[0].n_rows == static_cast<int64_t>(request.tokens.size()),
              "a single segment covers the ubatch");
  forward_ubatch(request, *segments[0].memory, workspace, pool);
}

}  // namespace augur::model
