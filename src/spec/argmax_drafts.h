// Makes any drafter propose its argmax with a one-hot q, as llama.cpp's drafters do (they take
// the top candidate and the target "samples and compares"): the same law (acceptance p(d), the
// residual p without d), but a sampled draft with its real q is accepted more often. This
// wrapper exists to measure that gain on the same drafter (`spec:eagle3-argmax:K` arms); greedy
// sessions are unaffected.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "spec/draft_source.h"

namespace augur::spec {

class ArgmaxDrafts final : public DraftSource {
 public:
  explicit ArgmaxDrafts(std::unique_ptr<DraftSource> inner) : inner_(std::move(inner)) {}

  std::string name() const override { return inner_->name() + "-argmax"; }
  void begin(std::span<const int32_t> prompt) override { inner_->begin(prompt); }
  void reset() override { inner_->reset(); }
  void propose(const DraftRequest& request, Draft& out) override;
  void observe(int n_accepted) override { inner_->observe(n_accepted); }
  int64_t memory_bytes() const override { return inner_->memory_bytes(); }
  std::span<const int32_t> feature_layers() const override { return inner_->feature_layers(); }
  void take_features(int64_t first, int64_t n, int64_t n_embd, const float* features) override {
    inner_->take_features(first, n, n_embd, features);
  }
  int64_t reusable_prefix(std::span<const int32_t> prompt) const override {
    return inner_->reusable_prefix(prompt);
  }
  const DraftSource& inner() const { return *inner_; }

 private:
  std::unique_ptr<DraftSource> inner_;
  std::optional<sampling::Sampler> greedy_;  // the session's transforms at temperature 0
};

}  // namespace augur::spec
