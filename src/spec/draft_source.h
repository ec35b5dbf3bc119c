// What every drafter implements (design/ARCHITECTURE.md, "Draft sources"): propose up to k
// tokens that continue the committed context, each with the distribution q it was drawn from
// (or none: a deterministic drafter, q = one-hot on the token), then learn how many the target
// kept. The engine verifies the proposal in one target forward and commits; a drafter with a
// cache must hold only committed tokens after observe().
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace augur::model {
class ForwardBatcherSet;
}

namespace augur::spec {

struct DraftRequest {
  std::span<const int32_t> context;  // committed tokens, prompt first; never empty
  int k_max = 0;                     // propose at most this many (>= 0)
  // The session's sampler and RNG. A drafter that samples draws with this sampler's config so
  // that p and q come from the same transforms; a deterministic one ignores both.
  const sampling::Sampler* sampler = nullptr;
  sampling::Rng* rng = nullptr;
  // Dynamic draft length: a drafter that drafts token by token asks this after each token
  // (n_drafted >= 1 tokens so far, confidence of the last one) and stops when it returns false.
  // The answer may depend on the drafts themselves but never on the target, so stopping keeps
  // the output law exact. Empty: draft k_max tokens.
  std::function<bool(int n_drafted, float confidence)> keep_drafting;
};

struct Draft {
  std::vector<int32_t> tokens;  // d1..dk, k <= k_max
  std::vector<float> q;         // [k, n_vocab], q_i the row d_i was drawn from; empty = one-hot
  // [k] or empty: how sure the drafter was of d_i (q_i(d_i) when sampling; its softmax
  // probability at temperature 1 when greedy). A feature for the policy, not part of the law.
  std::vector<float> confidence;
  void clear() {
    tokens.clear();
    q.clear();
    confidence.clear();
  }
};

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Short, stable name for stats and reports ("model", "ngram", "layerskip").
  virtual std::string name() const = 0;
  // Called once per generation, inside the prefill timing, with the prompt; a drafter with a
  // model evaluates it here (reusing any prefix it already holds).
  virtual void begin(std::span<const int32_t> prompt) = 0;
  // Forgets any cached state, so the next begin() starts from nothing (timed benchmark runs).
  virtual void reset() {}
  // Writes a proposal into `out` (cleared first). May propose nothing.
  virtual void propose(const DraftRequest& request, Draft& out) = 0;
  // The target kept the first n_accepted tokens of the last proposal (then appended one token of
  // its own, which the next request's context shows).
  virtual void observe(int n_accepted) = 0;
  // Bytes this drafter holds of its own: a model it alone reads, its cache and buffers (not the
  // target's weights it may share). Benchmark reports count it per arm.
  virtual int64_t memory_bytes() const = 0;

  // Drafters that read the target's hidden states (EAGLE-3 and kin) name the taps here
  // (model::UbatchRequest::capture_layers): the engine captures them in the forwards it runs
  // anyway — prefill and every verify, no second pass — and hands them over with
  // take_features. Empty (the default): nothing is captured, at no cost.
  virtual std::span<const int32_t> feature_layers() const { return {}; }
  // The target's features of the tokens at positions [first, first + n), [n, taps, n_embd]
  // (n_embd: the target's hidden size):
  // the prefill's rows (before begin()), then each verify forward's (the carry and the drafts;
  // the next request's context shows which of them were committed). Supersedes any features
  // it holds at positions >= first.
  virtual void take_features(int64_t /*first*/, int64_t /*n*/, int64_t /*n_embd*/,
                             const float* /*features*/) {}
  // How many leading tokens of `prompt` it can go on from without being given their features
  // again: the engine re-evaluates the prompt from there at the latest, so prefix reuse never
  // leaves a feature reader short. Drafters without features: all of them.
  virtual int64_t reusable_prefix(std::span<const int32_t> prompt) const {
    return static_cast<int64_t>(prompt.size());
  }

  // Routes the drafter's own forwards through batchers shared with other sessions' drafters
  // (the server); a drafter without forwards ignores it.
  virtual void share_forwards(model::ForwardBatcherSet& /*batchers*/) {}

  // True when propose() costs next to nothing and changes no state, so a proposal may be looked
  // at and dropped without observe() (n-gram lookup): a planner asks such a source every cycle.
  virtual bool proposals_are_free() const { return false; }

  // For drafters that plan (the auto policy): times of the engine's verify forwards. Called once
  // per generation after the prompt is in the cache; `time_verify(m)` runs a target forward of m
  // rows at the current context, rolls it back and returns its seconds.
  using VerifyTimer = std::function<double(int rows)>;
  virtual void calibrate(const VerifyTimer& /*time_verify*/) {}
  // What the last cycle cost, called after observe(): rows verified (drafts + 1), seconds in
  // propose/observe, in the verify forward, and in the rest of the cycle (sampling, acceptance).
  struct CycleCost {
    int rows = 1;
    double draft_s = 0, verify_s = 0, other_s = 0;
  };
  virtual void observe_cost(const CycleCost& /*cost*/) {}
};

}  // namespace augur::spec
