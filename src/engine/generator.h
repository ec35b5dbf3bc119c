// The generation loop: prefill the prompt in ubatches, then either decode one token per target
// forward (AR), or run speculative cycles (design/ARCHITECTURE.md): a DraftSource proposes
// d1..dk, ONE target forward over [carry, d1..dk] gives p0..pk, the Acceptor keeps n drafts and
// appends one token, and the target cache commits exactly the rows of the committed tokens.
// Stops at n tokens, an end-of-generation token, a full context, or when the caller says stop.
// Prefill and decode are timed separately (decode-only speed is the headline).
//
// Exactness: the first token comes from the prefill's logits exactly as in AR; every later row p_i
// is Sampler::distribution over the history that position has in AR (context plus the draft
// prefix, so repetition penalties follow the draft), and a row's logits do not depend on the
// batch shape (kernels are batch-invariant). So greedy speculative output equals AR token for
// token, and sampled output has AR's law.
//
// Prefix reuse: the cache is kept between calls; a prompt that extends what the cache holds only
// evaluates its new tokens (reset() forgets everything, e.g. before a timed benchmark run).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "model/evaluator.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "spec/acceptance.h"
#include "spec/draft_source.h"

namespace augur::engine {

// Drafts per cycle: 1 .. kMaxDraft.
inline constexpr int kMaxDraft = 32;

struct CycleInfo {
  std::span<const int32_t> committed;  // prompt + every committed token so far
  int drafted = 0;
  int accepted = 0;
};

struct GenerateOptions {
  int n_predict = 128;      // tokens to generate; < 0 means until EOG or the context is full
  bool ignore_eos = false;  // keep going through end-of-generation tokens
  spec::DraftSource* drafter = nullptr;  // null: autoregressive decoding
  int draft_max = 8;                     // k: drafts per cycle, 1..kMaxDraft
  // How sampled cycles decide what to keep (spec/acceptance.h): both give AR's law exactly;
  // the block rule keeps at least as many drafts in expectation.
  spec::SampledRule sampled_rule = spec::SampledRule::kBlock;
  // Tests only: an Acceptor subclass with a planted defect instead of the generator's own
  // (tests/support/planted_acceptors.h); it keeps its own rule (sampled_rule is not applied).
  spec::Acceptor* acceptor = nullptr;
  // Called after each speculative cycle has committed (caches hold only committed rows).
  std::function<void(const CycleInfo&)> on_cycle;
  // Called for each generated token, before on_token, with the target's logits row it was
  // drawn from ([n_vocab]; the same bits AR would see, the kernels being batch-invariant):
  // what log-probabilities are reported from. Empty: not called.
  std::function<void(int32_t token, std::span<const float> logits)> on_token_logits;
};

enum class StopReason { Length, EndOfGeneration, ContextFull, Cancelled };
std::string_view stop_reason_name(StopReason reason);

struct SpecStats {
  std::string drafter;               // DraftSource::name(), empty for AR
  int64_t cycles = 0;                // target verify forwards (each commits accepted + 1 tokens)
  int64_t drafted = 0;               // draft tokens proposed
  int64_t accepted = 0;              // draft tokens kept
  std::vector<int64_t> accept_hist;  // [k + 1]: cycles that kept exactly j drafts
  std::vector<int64_t> drafted_at;   // [k]: cycles whose draft reached position i + 1
  std::vector<int64_t> accepted_at;  // [k]: cycles that kept draft position i + 1
  double draft_s = 0;                // in DraftSource::propose / observe
  double verify_s = 0;               // in target forwards of the cycles
  // Committed tokens per target forward (cut-short final cycles count in full).
  double tau() const { return cycles > 0 ? static_cast<double>(accepted + cycles) / cycles : 0; }
};

struct GenerateStats {
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  int64_t n_prompt_evaluated = 0;  // prompt tokens actually run (the rest came from the cache)
  double prefill_s = 0;            // prompt forward(s), up to the first logits
  double decode_s = 0;             // everything after, until the last token
  double prefill_tok_s() const { return prefill_s > 0 ? n_prompt_evaluated / prefill_s : 0; }
  // Tokens produced after the first (which comes from the prefill's logits) per decode second.
  double decode_tok_s() const { return decode_s > 0 && n_gen > 1 ? (n_gen - 1) / decode_s : 0; }
  SpecStats spec;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated tokens (an end-of-generation token is not included)
  StopReason stop = StopReason::Length;
  GenerateStats stats;
};

// Called with each generated token as soon as it is known; returning false stops generation.
using TokenCallback = std::function<bool(int32_t token)>;
// Decides which tokens end generation (the tokenizer's EOG set).
using EogPredicate = std::function<bool(int32_t token)>;

class Generator {
 public:
  // `types`: the K/V row types of its cache (InvalidArgument for one the head size does not fit).
  Generator(const model::Model& model, kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch,
            cache::CacheTypes types = {});

  // InvalidArgument for an empty prompt, one that does not fit the context (with n_predict,
  // when n_predict >= 0), or a draft_max out of range.
  GenerateResult generate(std::span<const int32_t> prompt, const sampling::Sampler& sampler,
                          sampling::Rng& rng, const GenerateOptions& options,
                          const EogPredicate& is_eog, const TokenCallback& on_token = {});

  // Forgets the cached prefix: the next prompt is evaluated in full.
  void reset();

  // Target forwards go through `batcher`, combined with other sessions' (the server); while a
  // generate() runs, this session counts as one the batcher waits for. Null: run alone.
  // `drafters`: the batchers the drafters' forwards go through (DraftSource::share_forwards),
  // joined likewise while a generate() runs.
  void set_batcher(model::ForwardBatcher* batcher, model::ForwardBatcherSet* drafters = nullptr) {
    eval_.set_batcher(batcher);
    drafter_batchers_ = drafters;
  }

  // The K/V rows of the first n cached tokens, to be restored later (the server's prefix cache).
  struct Prefix {
    std::vector<int32_t> tokens;
    std::vector<uint8_t> rows;  // ModelCache::save
  };
  [[nodiscard]] Prefix save_prefix(int64_t n) const;
  // Makes the cache hold exactly `prefix` (saved from a generator of the same model and
  // context); the next generate() evaluates only what its prompt adds.
  void restore_prefix(const Prefix& prefix);

  int64_t n_ctx() const { return cache_.capacity(); }
  // Bytes of the session: the model file it maps, its cache and its buffers.
  int64_t memory_bytes() const;
  // For tests: the target cache and the tokens whose rows it holds.
  const cache::ModelCache& cache() const { return cache_; }
  const std::vector<int32_t>& cached_tokens() const { return cached_; }

 private:
  class Run;
  friend class Run;

  const model::Model& model_;
  cache::ModelCache cache_;
  model::Evaluator eval_;
  spec::Acceptor acceptor_;
  std::vector<int32_t> cached_;     // tokens whose rows are committed in cache_
  std::vector<float> logits_;       // [(kMaxDraft + 1), n_vocab]
  std::vector<float> probs_;        // [(kMaxDraft + 1), n_vocab]
  std::vector<int32_t> verify_in_;  // [carry, d1..dk]
  std::vector<int32_t> positions_;
  std::vector<int32_t> out_rows_;
  std::vector<float> features_;  // [verify rows, taps, n_embd] for a drafter that reads them
  spec::Draft draft_;
  model::ForwardBatcherSet* drafter_batchers_ = nullptr;
};

}  // namespace augur::engine
