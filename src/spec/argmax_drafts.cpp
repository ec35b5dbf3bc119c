#include "spec/argmax_drafts.h"

namespace augur::spec {

void ArgmaxDrafts::propose(const DraftRequest& request, Draft& out) {
  if (request.sampler == nullptr || request.sampler->greedy()) {
    inner_->propose(request, out);
    return;
  }
  if (!greedy_ || greedy_->n_vocab() != request.sampler->n_vocab()) {
    sampling::SamplerConfig config = request.sampler->config();
    config.temperature = 0.0f;
    greedy_.emplace(config, request.sampler->n_vocab());
  }
  DraftRequest argmax = request;
  argmax.sampler = &*greedy_;
  inner_->propose(argmax, out);
  out.q.clear();  // one-hot on each draft
}

}  // namespace augur::spec
