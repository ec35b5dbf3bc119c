#include "engine/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"

static_assert(augur::engine::kMaxDraft + 1 <= augur::cache::kMaxRollback,
              "the cache can undo a verify of the longest draft");

namespace augur::engine {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Length: return "length";
    case StopReason::EndOfGeneration: return "eog";
    case StopReason::ContextFull: return "context_full";
    case StopReason::Cancelled: return "cancelled";
  }
  return "unknown";
}

// One generate() call: the committed history, the result being built, and the two decode loops.
class Generator::Run {
 public:
  Run(Generator& g, std::span<const int32_t> prompt, const sampling::Sampler& sampler,
      sampling::Rng& rng, const GenerateOptions& options, const EogPredicate& is_eog,
      const TokenCallback& on_token)
      : g_(g),
        prompt_(prompt),
        sampler_(sampler),
        rng_(rng),
        opt_(options),
        is_eog_(is_eog),
        on_token_(on_token),
        n_vocab_(static_cast<size_t>(g.model_.hparams().n_vocab)),
        history_(prompt.begin(), prompt.end()) {}

  GenerateResult run() {
    result_.stats.n_prompt = static_cast<int64_t>(prompt_.size());
    if (opt_.n_predict == 0) return std::move(result_);
    prefill();
    const auto start = Clock::now();
    const int32_t first = sampler_.sample(row(g_.logits_, 0), history_, rng_);
    if (emit(first, 0)) {
      if (opt_.drafter) {
        speculative_loop();
      } else {
        ar_loop();
      }
    }
    result_.stats.n_gen = static_cast<int64_t>(result_.tokens.size());
    result_.stats.decode_s = seconds_since(start);
    return std::move(result_);
  }

 private:
  std::span<float> row(std::vector<float>& rows, size_t i) const {
    return {rows.data() + i * n_vocab_, n_vocab_};
  }

  // Evaluates the prompt past the longest prefix the cache already holds (at least its last
  // token, whose logits give the first token); tells the drafter the prompt.
  void prefill() {
    const auto start = Clock::now();
    const auto n_prompt = static_cast<int64_t>(prompt_.size());
    const auto common = static_cast<int64_t>(
        std::mismatch(g_.cached_.begin(), g_.cached_.end(), prompt_.begin(), prompt_.end()).first -
        g_.cached_.begin());
    int64_t keep = std::min(common, n_prompt - 1);
    const std::span<const int32_t> taps =
        opt_.drafter ? opt_.drafter->feature_layers() : std::span<const int32_t>();
    // A drafter that reads the target's features needs them for every row it lacks.
    if (!taps.empty()) keep = std::min(keep, opt_.drafter->reusable_prefix(prompt_));
    if (!g_.cache_.can_truncate(keep)) keep = 0;  // a recurrent state cannot go back: start over
    g_.cache_.truncate(keep);
    g_.cached_.resize(static_cast<size_t>(keep));
    const auto rest = prompt_.subspan(static_cast<size_t>(keep));
    model::RowExtras extras;
    if (!taps.empty()) {
      extras.capture_layers = taps;
      extras.on_features = [&](int64_t first_row, int64_t n, const float* features) {
        opt_.drafter->take_features(keep + first_row, n, g_.model_.hparams().n_embd, features);
      };
    }
    g_.eval_.forward_last(rest, g_.cache_.memory(), g_.logits_.data(), -1, extras);
    g_.cache_.commit(static_cast<int64_t>(rest.size()));
    g_.cached_.insert(g_.cached_.end(), rest.begin(), rest.end());
    if (opt_.drafter) {
      opt_.drafter->begin(prompt_);
      opt_.drafter->calibrate([this](int rows) { return time_verify(rows); });
    }
    result_.stats.n_prompt_evaluated = static_cast<int64_t>(rest.size());
    result_.stats.prefill_s = seconds_since(start);
  }

  // Seconds of one target forward of `rows` rows at the current context, rolled back: what a
  // verify of rows - 1 drafts costs here (a planning drafter's calibration).
  double time_verify(int rows) {
    AUGUR_CHECK(rows >= 1 && rows <= kMaxDraft + 1, "a verify has 1..kMaxDraft + 1 rows");
    if (g_.cache_.size() + rows > g_.cache_.capacity()) return 0;  // no room: not measured
    const auto start = Clock::now();
    g_.verify_in_.assign(static_cast<size_t>(rows), history_.back());
    g_.positions_.resize(g_.verify_in_.size());
    g_.out_rows_.resize(g_.verify_in_.size());
    for (int i = 0; i < rows; ++i) {
      g_.positions_[static_cast<size_t>(i)] = static_cast<int32_t>(g_.cache_.size() + i);
      g_.out_rows_[static_cast<size_t>(i)] = i;
    }
    g_.eval_.forward(g_.verify_in_, g_.positions_, g_.out_rows_, g_.cache_.memory(),
                     g_.probs_.data());  // scratch: the rows are thrown away
    g_.cache_.commit(0);
    return planning_cost(seconds_since(start));
  }

  // What a target forward that took `wall_s` costs this session when planning: its wall time
  // alone, or, batched with other sessions, its share of the combined forward (the batcher's
  // attribution: waiting for others is not the price of its own rows).
  double planning_cost(double wall_s) const {
    const double batched = g_.eval_.last_forward_cost_s();
    return batched >= 0 ? batched : wall_s;
  }

  // Hands one committed token, drawn from logits row `logits_row`, to the caller; false once
  // generation must stop.
  bool emit(int32_t token, size_t logits_row) {
    if (!opt_.ignore_eos && is_eog_ && is_eog_(token)) return stop(StopReason::EndOfGeneration);
    if (opt_.on_token_logits) opt_.on_token_logits(token, row(g_.logits_, logits_row));
    result_.tokens.push_back(token);
    history_.push_back(token);
    if (on_token_ && !on_token_(token)) return stop(StopReason::Cancelled);
    if (opt_.n_predict >= 0 && static_cast<int64_t>(result_.tokens.size()) >= opt_.n_predict) {
      return stop(StopReason::Length);
    }
    return true;
  }
  bool stop(StopReason reason) {
    result_.stop = reason;
    return false;
  }
  // The cache holds every committed token but the last (the carry); it needs a row for it.
  bool context_full() { return g_.cache_.size() >= g_.cache_.capacity(); }

  void ar_loop() {
    for (;;) {
      if (context_full()) {
        stop(StopReason::ContextFull);
        return;
      }
      const int32_t carry = history_.back();
      g_.eval_.forward_last(std::span<const int32_t>(&carry, 1), g_.cache_.memory(),
                            g_.logits_.data());
      g_.cache_.commit(1);
      g_.cached_.push_back(carry);
      if (!emit(sampler_.sample(row(g_.logits_, 0), history_, rng_), 0)) return;
    }
  }

  void speculative_loop() {
    spec::DraftSource& drafter = *opt_.drafter;
    spec::Acceptor& acceptor = opt_.acceptor ? *opt_.acceptor : g_.acceptor_;
    if (!opt_.acceptor) g_.acceptor_.set_rule(opt_.sampled_rule);  // a test's keeps its own
    SpecStats& st = result_.stats.spec;
    st.drafter = drafter.name();
    st.accept_hist.assign(static_cast<size_t>(opt_.draft_max) + 1, 0);
    st.drafted_at.assign(static_cast<size_t>(opt_.draft_max), 0);
    st.accepted_at.assign(static_cast<size_t>(opt_.draft_max), 0);
    spec::Draft& draft = g_.draft_;
    for (;;) {
      if (context_full()) {
        stop(StopReason::ContextFull);
        return;
      }
      // Never draft past the context or past the tokens still wanted: a cycle commits up to
      // k + 1 tokens and its verify appends k + 1 rows.
      int64_t k = std::min<int64_t>(opt_.draft_max, g_.cache_.capacity() - g_.cache_.size() - 1);
      if (opt_.n_predict >= 0) {
        k = std::min<int64_t>(k, opt_.n_predict - static_cast<int64_t>(result_.tokens.size()) - 1);
      }
      k = std::max<int64_t>(k, 0);

      const auto cycle_start = Clock::now();
      auto start = cycle_start;
      drafter.propose({history_, static_cast<int>(k), &sampler_, &rng_, {}}, draft);
      double draft_s = seconds_since(start);
      const auto kd = static_cast<int64_t>(draft.tokens.size());
      AUGUR_CHECK(kd <= k, "a drafter proposes at most k_max tokens");
      AUGUR_CHECK(draft.q.empty() || draft.q.size() >= static_cast<size_t>(kd) * n_vocab_,
                  "a drafter's q has a row per draft token");

      start = Clock::now();
      const int32_t carry = history_.back();
      g_.verify_in_.assign(1, carry);
      g_.verify_in_.insert(g_.verify_in_.end(), draft.tokens.begin(), draft.tokens.end());
      g_.positions_.resize(g_.verify_in_.size());
      g_.out_rows_.resize(g_.verify_in_.size());
      for (size_t i = 0; i < g_.verify_in_.size(); ++i) {
        g_.positions_[i] = static_cast<int32_t>(g_.cache_.size() + static_cast<int64_t>(i));
        g_.out_rows_[i] = static_cast<int32_t>(i);
      }
      // Features for a drafter that reads them come out of this same forward.
      const std::span<const int32_t> taps = drafter.feature_layers();
      model::RowExtras extras;
      if (!taps.empty()) {
        extras.capture_layers = taps;
        extras.on_features = [&](int64_t first_row, int64_t n, const float* features) {
          const size_t width = taps.size() * static_cast<size_t>(g_.model_.hparams().n_embd);
          g_.features_.resize((static_cast<size_t>(first_row + n)) * width);
          std::copy(features, features + n * static_cast<int64_t>(width),
                    g_.features_.begin() + first_row * static_cast<int64_t>(width));
        };
      }
      const int64_t first_position = g_.cache_.size();
      g_.eval_.forward(g_.verify_in_, g_.positions_, g_.out_rows_, g_.cache_.memory(),
                       g_.logits_.data(), -1, extras);
      const double verify_s = seconds_since(start);
      if (!taps.empty()) {
        start = Clock::now();
        drafter.take_features(first_position, static_cast<int64_t>(g_.verify_in_.size()),
                              g_.model_.hparams().n_embd, g_.features_.data());
        draft_s += seconds_since(start);
      }

      // p_i: the distribution AR would sample position i from, over its AR history.
      const size_t base = history_.size();
      history_.insert(history_.end(), draft.tokens.begin(), draft.tokens.end());
      for (int64_t i = 0; i <= kd; ++i) {
        sampler_.distribution(row(g_.logits_, static_cast<size_t>(i)),
                              std::span<const int32_t>(history_.data(), base + i),
                              row(g_.probs_, static_cast<size_t>(i)));
      }
      history_.resize(base);
      const std::span<const float> p(g_.probs_.data(), static_cast<size_t>(kd + 1) * n_vocab_);
      const std::span<const float> q =
          draft.q.empty()
              ? std::span<const float>()
              : std::span<const float>(draft.q.data(), static_cast<size_t>(kd) * n_vocab_);
      const spec::AcceptanceResult verdict = sampler_.greedy()
                                                 ? acceptor.greedy(draft.tokens, p)
                                                 : acceptor.sampled(draft.tokens, q, p, rng_);
      const int n = verdict.n_accepted;

      g_.cache_.commit(n + 1);
      g_.cached_.push_back(carry);
      g_.cached_.insert(g_.cached_.end(), draft.tokens.begin(), draft.tokens.begin() + n);
      start = Clock::now();
      drafter.observe(n);
      draft_s += seconds_since(start);
      const double cycle_s = seconds_since(cycle_start);
      drafter.observe_cost({static_cast<int>(kd) + 1, draft_s, planning_cost(verify_s),
                            std::max(0.0, cycle_s - draft_s - verify_s)});
      st.draft_s += draft_s;
      st.verify_s += verify_s;

      ++st.cycles;
      st.drafted += kd;
      st.accepted += n;
      ++st.accept_hist[static_cast<size_t>(n)];
      for (int64_t i = 0; i < kd; ++i) ++st.drafted_at[static_cast<size_t>(i)];
      for (int i = 0; i < n; ++i) ++st.accepted_at[static_cast<size_t>(i)];

      bool go_on = true;
      for (int i = 0; i < n && go_on; ++i) {
        go_on = emit(draft.tokens[static_cast<size_t>(i)], static_cast<size_t>(i));
      }
      if (go_on) go_on = emit(verdict.next_token, static_cast<size_t>(n));
      if (opt_.on_cycle) opt_.on_cycle({history_, static_cast<int>(kd), n});
      if (!go_on) return;
    }
  }

  Generator& g_;
  std::span<const int32_t> prompt_;
  const sampling::Sampler& sampler_;
  sampling::Rng& rng_;
  const GenerateOptions& opt_;
  const EogPredicate& is_eog_;
  const TokenCallback& on_token_;
  size_t n_vocab_;
  std::vector<int32_t> history_;  // prompt + committed tokens
  GenerateResult result_;
};

Generator::Generator(const model::Model& model, kernels::ThreadPool& pool, int64_t n_ctx,
                     int64_t ubatch, cache::CacheTypes types)
    : model_(model),
      cache_(model, {.capacity = n_ctx, .max_batch = ubatch, .type_k = types.k, .type_v = types.v}),
      eval_(model, pool, ubatch, n_ctx),
      acceptor_(static_cast<int>(model.hparams().n_vocab)),
      logits_(static_cast<size_t>(kMaxDraft + 1) * static_cast<size_t>(model.hparams().n_vocab)),
      probs_(logits_.size()) {}

Generator::Prefix Generator::save_prefix(int64_t n) const {
  AUGUR_CHECK(n >= 0 && n <= static_cast<int64_t>(cached_.size()), "save within the cached tokens");
  return {std::vector<int32_t>(cached_.begin(), cached_.begin() + n), cache_.save(n)};
}

void Generator::restore_prefix(const Prefix& prefix) {
  cache_.restore(prefix.rows, static_cast<int64_t>(prefix.tokens.size()));
  cached_ = prefix.tokens;
}

void Generator::reset() {
  cache_.clear();
  cached_.clear();
}

GenerateResult Generator::generate(std::span<const int32_t> prompt,
                                   const sampling::Sampler& sampler, sampling::Rng& rng,
                                   const GenerateOptions& options, const EogPredicate& is_eog,
                                   const TokenCallback& on_token) {
  const int64_t n_ctx = cache_.capacity();
  if (prompt.empty()) throw InvalidArgument("the prompt is empty: nothing to condition on");
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt > n_ctx) {
    throw InvalidArgument(fmt::format(
        "prompt of {} tokens does not fit the context of {} (raise -c)", n_prompt, n_ctx));
  }
  // The last generated token is never fed back, so n tokens need n_prompt + n - 1 rows.
  if (options.n_predict > 0 && n_prompt + options.n_predict - 1 > n_ctx) {
    throw InvalidArgument(fmt::format(
        "prompt ({} tokens) + {} generated tokens do not fit the context of {} (raise -c)",
        n_prompt, options.n_predict, n_ctx));
  }
  if (options.drafter && (options.draft_max < 1 || options.draft_max > kMaxDraft)) {
    throw InvalidArgument(
        fmt::format("draft length {} is out of range: use 1..{}", options.draft_max, kMaxDraft));
  }
  if (sampler.n_vocab() != model_.hparams().n_vocab) {
    throw InvalidArgument(fmt::format("sampler is for {} tokens, the model has {}",
                                      sampler.n_vocab(), model_.hparams().n_vocab));
  }
  const model::ForwardBatcher::Participation batched(eval_.batcher());
  struct DrafterParticipation {
    model::ForwardBatcherSet* set;
    explicit DrafterParticipation(model::ForwardBatcherSet* s) : set(s) {
      if (set) set->join_all();
    }
    ~DrafterParticipation() {
      if (set) set->leave_all();
    }
  } drafting(drafter_batchers_);
  try {
    return Run(*this, prompt, sampler, rng, options, is_eog, on_token).run();
  } catch (...) {
    reset();  // a failed forward may leave pending rows: start clean next time
    throw;
  }
}

int64_t Generator::memory_bytes() const {
  const auto vector_bytes = [](const auto& v) {
    return static_cast<int64_t>(v.capacity() * sizeof(v[0]));
  };
  // Buffers sized at construction; token lists that grow with the text (a few KB) are left out,
  // so the figure is the same for every run of a session.
  return static_cast<int64_t>(model_.file().file_size()) + cache_.bytes() + eval_.bytes() +
         vector_bytes(logits_) + vector_bytes(probs_);
}

}  // namespace augur::engine
