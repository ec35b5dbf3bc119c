#include "spec/draft_sampling.h"

#include <algorithm>
#include <cmath>

namespace augur::spec {
namespace {

// softmax(logits)[token] at temperature 1: how sure a greedy drafter is of its argmax.
float softmax_probability(std::span<const float> logits, int32_t token) {
  const float top = *std::max_element(logits.begin(), logits.end());
  float sum = 0;
  for (const float l : logits) sum += std::exp(l - top);
  return std::exp(logits[static_cast<size_t>(token)] - top) / sum;
}

}  // namespace

void draft_token_by_token(const DraftRequest& request, std::span<const float> logits,
                          std::vector<int32_t>& history, Draft& out,
                          const std::function<void(int32_t token)>& next) {
  const size_t n_vocab = logits.size();
  history.assign(request.context.begin(), request.context.end());
  out.q.resize(static_cast<size_t>(request.k_max) * n_vocab);
  for (int i = 0; i < request.k_max; ++i) {
    const std::span<float> q(out.q.data() + static_cast<size_t>(i) * n_vocab, n_vocab);
    const int32_t token = request.sampler->sample(logits, history, *request.rng, q);
    out.tokens.push_back(token);
    history.push_back(token);
    if (request.keep_drafting) {  // only a planner reads confidences: no cost otherwise
      const float confidence = request.sampler->greedy() ? softmax_probability(logits, token)
                                                         : q[static_cast<size_t>(token)];
      out.confidence.push_back(confidence);
      if (i + 1 < request.k_max && !request.keep_drafting(i + 1, confidence)) break;
    }
    if (i + 1 == request.k_max) break;
    next(token);
  }
  out.q.resize(out.tokens.size() * n_vocab);
}

}  // namespace augur::spec
