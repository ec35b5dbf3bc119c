// A DraftSource wrapper for cache-state tests of drafters that read the target: it forwards
// everything to the real drafter, altering the features or the context it is handed per a planted
// Defect.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "spec/draft_source.h"

namespace augur::testing {

enum class Defect {
  kNone,
  kNextRowFeatures,
  kStaleVerifyFeatures,
  kPromptOneLate,
  // Each proposal gets the context without its last token: the drafter's rows lag one token more
  // than they may, yet stay a correct prefix, so only the runner's row bound can notice.
  kContextOneShort,
  // The drafter's list of the tokens its rows are for comes back with its last token changed
  // (applied by run_cache_state to what the probe reads): the rows stay right, the list does not.
  kClaimsWrongTokens,
};

// Forwards everything to the real drafter, altering the features it is given per `defect`.
class FeatureTamperer final : public spec::DraftSource {
 public:
  FeatureTamperer(spec::DraftSource& inner, Defect defect) : inner_(inner), defect_(defect) {}
  std::string name() const override { return inner_.name(); }
  std::span<const int32_t> feature_layers() const override { return inner_.feature_layers(); }
  int64_t reusable_prefix(std::span<const int32_t> p) const override {
    return inner_.reusable_prefix(p);
  }
  void begin(std::span<const int32_t> prompt) override {
    in_prefill_ = false;
    inner_.begin(prompt);
  }
  void reset() override { inner_.reset(); }
  void propose(const spec::DraftRequest& r, spec::Draft& out) override {
    if (defect_ == Defect::kContextOneShort && r.context.size() > 2) {
      spec::DraftRequest shorter = r;
      shorter.context = r.context.first(r.context.size() - 1);
      inner_.propose(shorter, out);
      return;
    }
    inner_.propose(r, out);
  }
  void observe(int n) override { inner_.observe(n); }
  int64_t memory_bytes() const override { return inner_.memory_bytes(); }

  void take_features(int64_t first, int64_t n, int64_t n_embd, const float* f) override {
    const auto width = static_cast<int64_t>(feature_layers().size()) * n_embd;
    std::vector<float> rows(f, f + n * width);
    const bool verify = !in_prefill_;
    switch (defect_) {
      case Defect::kNone:
      case Defect::kContextOneShort:
      case Defect::kClaimsWrongTokens: break;
      case Defect::kNextRowFeatures:  // row i gets row i + 1's (the last keeps its own)
        if (verify) std::copy(f + width, f + n * width, rows.begin());
        break;
      case Defect::kStaleVerifyFeatures:  // the previous verify's rows, as far as they reach
        if (verify && !last_verify_.empty()) {
          std::copy_n(last_verify_.begin(), std::min(last_verify_.size(), rows.size()),
                      rows.begin());
        }
        if (verify) last_verify_.assign(f, f + n * width);
        break;
      case Defect::kPromptOneLate:  // the prompt's features one position late
        if (!verify && first + n > 1) {
          std::copy(f, f + (n - 1) * width, rows.begin() + width);
        }
        break;
    }
    inner_.take_features(first, n, n_embd, rows.data());
  }
  // The engine calls take_features for the prompt before begin(); later ones are verifies.
  void start_run() { in_prefill_ = true; }

 private:
  spec::DraftSource& inner_;
  Defect defect_;
  bool in_prefill_ = true;
  std::vector<float> last_verify_;
};

}  // namespace augur::testing
