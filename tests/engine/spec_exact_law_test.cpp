// The exact-law proof of sampled speculative decoding, by enumeration through engine::Generator
// itself: no harness re-implements the loop. The target and the draft model are ScriptedModels
// (tests/support/scripted_model.h): their logits are fixed functions of the history each reads
// back from the KV cache the loop manages, run by the real Evaluator. The drafters are the real
// spec::ModelDrafter (soft q) and spec::NgramDrafter (one-hot), plus a deterministic argmax
// drafter behind the DraftSource interface (one-hot, proposing tokens the target forbids). The
// session's Rng is an EnumeratingRng (tests/sampling/enumerating_rng.h): every random choice of a
// generation (the first token, each draft draw, each accept test, each residual or bonus draw)
// names its law, and the test replays generate() once per branch, weighing each by its exact
// probability.
//
// So the loop's own bookkeeping is what is proven: the history each p row and q row is computed
// over (repetition penalties follow the draft prefix), which q row goes with which draft, the
// bonus row, the commit counts of both caches (the scripted models see whatever the caches hold),
// positions, prefix reuse between calls (every branch reuses the cached prompt), and how k is cut
// near the end. For each sampler setting x drafter x k in 1..3, the law of the k + 2 generated
// tokens (so a bonus can land after a first one-token cycle; 6 tokens in a few longer cases, for
// several full cycles) must equal the AR law, computed directly from the scripted target and
// Sampler::distribution, to 1e-9; AR through the Generator is checked against it too. Coverage is
// measured (cycles that drafted, rejections followed by another cycle, bonus draws) so a case
// cannot pass by never reaching a branch.
//
// Planted defects, each behind the real interfaces and each an expected failure:
//   (a) stale penalty history: a target whose verify rows come out as if p_i were computed over
//       the committed history without the draft prefix (a ScriptedModel subclass that undoes the
//       penalty of the draft tokens in rows 1..k, so the loop's own Sampler produces the stale
//       rows, up to one rounding of each logit; without a penalty the same wrapper passes, which
//       is the control);
//   (b) q row of the wrong position: a DraftSource wrapper that reports q_{i-1} for draft i;
//   (c) bonus from q instead of p, and the acceptance-rule defects of
//       tests/support/planted_acceptors.h, handed to the Generator as its Acceptor;
//   (d) a drafter that drops drafted tokens by their own q (a "dynamic draft length" done wrong).
// The auto policy (spec::AutoDrafter with fixed costs, rebuilt for every replay) runs the same
// check: it stops drafting by confidence and changes source and k from cycle to cycle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "kernels/thread_pool.h"
#include "sampling/enumerating_rng.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "spec/acceptance.h"
#include "spec/auto_drafter.h"
#include "spec/draft_policy.h"
#include "spec/draft_source.h"
#include "spec/model_drafter.h"
#include "spec/ngram_drafter.h"
#include "support/planted_acceptors.h"
#include "support/scripted_model.h"

namespace augur::engine {
namespace {

using sampling::Sampler;
using sampling::SamplerConfig;
using sampling::testing::EnumeratingRng;
using testing::HistoryLogits;
using testing::ScriptedModel;

constexpr int kVocab = 4;
constexpr double kTolerance = 1e-9;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
const std::vector<int32_t> kPrompt = {1, 3, 1};
const EogPredicate kNeverEog = [](int32_t) { return false; };

// Logits from a seeded table indexed by the last two tokens and the parity of the history length,
// scaled into [lo, hi]; `edit` then adjusts them per history.
using LogitEdit = std::function<void(std::span<const int32_t>, std::span<float>)>;
HistoryLogits table_lm(uint64_t seed, float lo, float hi, LogitEdit edit = {}) {
  constexpr size_t kRows = (kVocab + 1) * (kVocab + 1) * 2;
  std::vector<float> table(kRows * kVocab);  // [(prev2, prev1, parity), n_vocab]
  sampling::SeededRng rng(seed);
  for (float& logit : table) logit = lo + (hi - lo) * static_cast<float>(rng.uniform());
  return [table = std::move(table), edit = std::move(edit)](std::span<const int32_t> history,
                                                            std::span<float> out) {
    const size_t n = history.size();
    const size_t prev1 = n >= 1 ? history[n - 1] : kVocab;
    const size_t prev2 = n >= 2 ? history[n - 2] : kVocab;
    const size_t row = ((prev2 * (kVocab + 1)) + prev1) * 2 + n % 2;
    std::copy_n(table.begin() + static_cast<std::ptrdiff_t>(row * kVocab), kVocab, out.begin());
    if (edit) edit(history, out);
  };
}

// The target forbids token 3 after token 0; the drafter favours 3 and never proposes 0, so drafts
// the target forbids get tested and token 0 can only come from the residual.
HistoryLogits target_lm() {
  return table_lm(101, -2.0f, 2.0f, [](std::span<const int32_t> history, std::span<float> out) {
    if (history.back() == 0) out[3] = kNegInf;
  });
}
HistoryLogits draft_lm() {
  return table_lm(202, -2.0f, 2.0f, [](std::span<const int32_t>, std::span<float> out) {
    out[0] = kNegInf;
    out[3] += 1.0f;
  });
}

SamplerConfig make_config(float temperature, int top_k, float top_p, float min_p,
                          float repeat_penalty = 1.0f, int repeat_last_n = 0) {
  SamplerConfig config;
  config.temperature = temperature;
  config.top_k = top_k;
  config.top_p = top_p;
  config.min_p = min_p;
  config.repeat_penalty = repeat_penalty;
  config.repeat_last_n = repeat_last_n;
  return config;
}

struct Setting {
  std::string name;
  SamplerConfig config;
};

const std::vector<Setting>& settings() {
  static const std::vector<Setting> all = {
      {"TopKTopP", make_config(0.8f, 3, 0.9f, 0.0f)},
      {"MinP", make_config(1.0f, 0, 1.0f, 0.2f)},
      // A short window, so the draft prefix both adds penalised tokens and pushes old ones out.
      {"Penalty", make_config(0.9f, 0, 1.0f, 0.0f, 1.8f, 3)},
      {"AllTransforms", make_config(0.7f, 3, 0.95f, 0.05f, 1.4f, -1)},
      {"Greedy", make_config(0.0f, 0, 1.0f, 0.0f, 1.3f, 4)},
  };
  return all;
}

const Setting& setting_named(const std::string& name) {
  for (const Setting& setting : settings()) {
    if (setting.name == name) return setting;
  }
  ADD_FAILURE() << "no setting " << name;
  return settings().front();
}

// A deterministic drafter: proposes the argmax of its scripted logits, feeding its own proposals
// (q one-hot, so Draft::q stays empty).
class ArgmaxDrafter final : public spec::DraftSource {
 public:
  explicit ArgmaxDrafter(HistoryLogits logits) : logits_(std::move(logits)), row_(kVocab) {}
  std::string name() const override { return "argmax"; }
  void begin(std::span<const int32_t>) override {}
  void propose(const spec::DraftRequest& request, spec::Draft& out) override {
    out.clear();
    history_.assign(request.context.begin(), request.context.end());
    for (int pos = 0; pos < request.k_max; ++pos) {
      logits_(history_, row_);
      out.tokens.push_back(sampling::argmax(row_));
      history_.push_back(out.tokens.back());
    }
  }
  void observe(int) override {}
  int64_t memory_bytes() const override { return 0; }

 private:
  HistoryLogits logits_;
  std::vector<float> row_;        // [n_vocab]
  std::vector<int32_t> history_;  // context + proposals so far
};

// A drafter that passes everything to `inner` and then alters each proposal: the planted
// drafter defects below.
class TamperingDrafter : public spec::DraftSource {
 public:
  explicit TamperingDrafter(spec::DraftSource& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  void begin(std::span<const int32_t> prompt) override { inner_.begin(prompt); }
  void reset() override { inner_.reset(); }
  void propose(const spec::DraftRequest& request, spec::Draft& out) override {
    inner_.propose(request, out);
    if (!out.q.empty()) tamper(out);
  }
  void observe(int n_accepted) override { inner_.observe(n_accepted); }
  int64_t memory_bytes() const override { return inner_.memory_bytes(); }

 protected:
  virtual void tamper(spec::Draft& out) const = 0;

 private:
  spec::DraftSource& inner_;
};

// Defect (b): reports for draft i the q row of draft i - 1 (the first keeps its own).
class ShiftedQDrafter final : public TamperingDrafter {
 public:
  using TamperingDrafter::TamperingDrafter;

 protected:
  void tamper(spec::Draft& out) const override {
    for (size_t pos = out.tokens.size(); pos-- > 1;) {
      std::copy_n(out.q.begin() + static_cast<std::ptrdiff_t>((pos - 1) * kVocab), kVocab,
                  out.q.begin() + static_cast<std::ptrdiff_t>(pos * kVocab));
    }
  }
};

// Defect (d): a block cut by the values of tokens already drafted: drafts after the first whose
// q(d_i) < 0.5 are dropped. Stopping before drafting a token is safe (docs/policy.md); dropping a
// drafted one because of what it is biases the law, and the check must see it.
class DropsUnsureDraftsDrafter final : public TamperingDrafter {
 public:
  using TamperingDrafter::TamperingDrafter;

 protected:
  void tamper(spec::Draft& out) const override {
    for (size_t pos = 1; pos < out.tokens.size(); ++pos) {
      if (out.q[pos * kVocab + static_cast<size_t>(out.tokens[pos])] < 0.5f) {
        out.tokens.resize(pos);
        out.q.resize(pos * kVocab);
        return;
      }
    }
  }
};

// Defect (a): a target whose verify rows 1..k come out as if the loop computed p_i over the
// committed history alone (without d1..di): for each such row it undoes the repetition penalty of
// tokens only the full history has in its window (and applies it to tokens only the stale history
// has), so the loop's correct Sampler::distribution over the full history gives the stale row.
class StalePenaltyTarget final : public ScriptedModel {
 public:
  StalePenaltyTarget(HistoryLogits logits, SamplerConfig config)
      : ScriptedModel(kVocab, std::move(logits)), config_(config) {}

 protected:
  void row_logits(std::span<const int32_t> history, const Row& row,
                  std::span<float> out) const override {
    scripted_logits(history, out);
    if (row.n_wanted < 2 || row.index == 0) return;  // not a verify row past the carry
    const auto stale = history.first(static_cast<size_t>(row.memory_rows + 1));
    const float penalty = config_.repeat_penalty;
    for (int32_t token = 0; token < kVocab; ++token) {
      const bool in_full = in_window(history, token);
      const bool in_stale = in_window(stale, token);
      float& logit = out[token];
      if (in_full && !in_stale) logit = logit > 0.0f ? logit * penalty : logit / penalty;
      if (!in_full && in_stale) logit = logit > 0.0f ? logit / penalty : logit * penalty;
    }
  }

 private:
  bool in_window(std::span<const int32_t> history, int32_t token) const {
    const int last_n = config_.repeat_last_n;
    const size_t size =
        last_n < 0 ? history.size() : std::min(history.size(), static_cast<size_t>(last_n));
    const auto window = history.last(size);
    return std::find(window.begin(), window.end(), token) != window.end();
  }

  SamplerConfig config_;
};

// The auto policy with costs fixed here instead of measured, so that every replay of a generation
// makes the same decisions given the same random choices: T_V(m) = 1 + 0.3 (m - 1), 0.05 per
// drafted token for a model source, n-gram free. Its acceptance estimates still move with what
// each path accepts, so k and the source change from cycle to cycle and from path to path.
class FixedCostPolicy final : public spec::DraftPolicy {
 public:
  using DraftPolicy::DraftPolicy;

 protected:
  double verify_seconds(int rows) const override { return 1 + 0.3 * (rows - 1); }
  double draft_seconds(int source, int k) const override {
    return sources()[static_cast<size_t>(source)] == "ngram" ? 0 : 0.05 * k;
  }
  double other_seconds(int) const override { return 0; }
  bool costs_known() const override { return true; }
};

// spec::AutoDrafter over the draft model, n-gram lookup and the target as self-draft, built
// afresh at each generate() (begin()), so every replay starts from the same policy state. Records
// the (source, drafted) of every cycle of every replay.
class FreshAutoDrafter final : public spec::DraftSource {
 public:
  FreshAutoDrafter(const model::Model& target, const model::Model& draft, kernels::ThreadPool& pool,
                   int64_t n_ctx, int64_t ubatch, int k_max)
      : target_(target),
        draft_(draft),
        pool_(pool),
        n_ctx_(n_ctx),
        ubatch_(ubatch),
        k_max_(k_max) {}
  std::string name() const override { return "auto"; }
  void begin(std::span<const int32_t> prompt) override {
    std::vector<std::unique_ptr<spec::DraftSource>> sources;
    sources.push_back(std::make_unique<spec::ModelDrafter>(draft_, pool_, n_ctx_, ubatch_));
    sources.push_back(std::make_unique<spec::NgramDrafter>(1, 2));
    sources.push_back(std::make_unique<spec::ModelDrafter>(target_, pool_, n_ctx_, ubatch_));
    inner_ = std::make_unique<spec::AutoDrafter>(
        std::move(sources), std::make_unique<FixedCostPolicy>(
                                std::vector<std::string>{"model", "ngram", "self"}, k_max_));
    inner_->begin(prompt);
  }
  void propose(const spec::DraftRequest& request, spec::Draft& out) override {
    inner_->propose(request, out);
    const spec::CyclePlan& plan = inner_->last_plan();
    choices.insert({plan.source, static_cast<int>(out.tokens.size())});
  }
  void observe(int n_accepted) override { inner_->observe(n_accepted); }
  void calibrate(const VerifyTimer& time_verify) override { inner_->calibrate(time_verify); }
  void observe_cost(const CycleCost& cost) override { inner_->observe_cost(cost); }
  int64_t memory_bytes() const override { return inner_ ? inner_->memory_bytes() : 0; }

  std::set<std::pair<int, int>> choices;  // (source or spec::kArStep, drafted)

 private:
  const model::Model& target_;
  const model::Model& draft_;
  kernels::ThreadPool& pool_;
  int64_t n_ctx_, ubatch_;
  int k_max_;
  std::unique_ptr<spec::AutoDrafter> inner_;
};

enum class DrafterKind { DraftModel, SelfDraft, Argmax, Ngram, Auto };

std::string drafter_label(DrafterKind kind) {
  switch (kind) {
    case DrafterKind::DraftModel: return "DraftModel";
    case DrafterKind::SelfDraft: return "SelfDraft";
    case DrafterKind::Argmax: return "Argmax";
    case DrafterKind::Ngram: return "Ngram";
    case DrafterKind::Auto: return "Auto";
  }
  return "?";
}

enum class Defect {
  None,
  StalePenaltyHistory,    // (a)
  QRowOfWrongPosition,    // (b)
  BonusFromQ,             // (c)
  AcceptedCountOffByOne,  // the acceptance-rule defects, now test-side
  ResidualWithoutClamp,
  ResidualIsP,
  DropsUnsureDrafts,  // (d)
};

// Sequence of generated tokens -> probability.
using Law = std::map<std::vector<int32_t>, long double>;

// Expected numbers of cycles per generation (so they can exceed 1).
struct Coverage {
  long double drafted = 0.0L;              // cycles that drafted at least one token
  long double rejected_then_cycle = 0.0L;  // cycles that rejected a draft, then another cycle
  long double bonus = 0.0L;                // cycles that kept every draft (a bonus draw)
};

struct GeneratorLaw {
  Law law;
  Coverage coverage;
  size_t n_paths = 0;
};

// Every branch of generate() for `n_predict` tokens of kPrompt.
GeneratorLaw generator_law(Generator& gen, const SamplerConfig& config, spec::DraftSource* drafter,
                           int k, int n_predict, spec::Acceptor* acceptor,
                           spec::SampledRule rule = spec::SampledRule::kBlock) {
  const Sampler sampler(config, kVocab);
  EnumeratingRng rng;
  GenerateOptions opt;
  opt.n_predict = n_predict;
  opt.ignore_eos = true;
  opt.drafter = drafter;
  opt.draft_max = k;
  opt.acceptor = acceptor;
  opt.sampled_rule = rule;
  struct Cycle {
    int drafted, accepted;
  };
  std::vector<Cycle> cycles;
  opt.on_cycle = [&](const CycleInfo& cycle) { cycles.push_back({cycle.drafted, cycle.accepted}); };
  GeneratorLaw result;
  do {
    rng.start_run();
    cycles.clear();
    const GenerateResult r = gen.generate(kPrompt, sampler, rng, opt, kNeverEog);
    EXPECT_EQ(static_cast<int>(r.tokens.size()), n_predict);
    const long double weight = rng.weight();
    result.law[r.tokens] += weight;
    ++result.n_paths;
    for (size_t index = 0; index < cycles.size(); ++index) {
      const Cycle& cycle = cycles[index];
      if (cycle.drafted > 0) result.coverage.drafted += weight;
      if (cycle.accepted < cycle.drafted && index + 1 < cycles.size()) {
        result.coverage.rejected_then_cycle += weight;
      }
      if (cycle.drafted > 0 && cycle.accepted == cycle.drafted) result.coverage.bonus += weight;
    }
  } while (rng.next_path());
  return result;
}

void ar_law_from(const HistoryLogits& logits, const Sampler& sampler, std::vector<int32_t>& history,
                 size_t n_total, long double mass, Law& law) {
  if (history.size() == n_total) {
    law[std::vector<int32_t>(history.begin() + static_cast<std::ptrdiff_t>(kPrompt.size()),
                             history.end())] += mass;
    return;
  }
  std::vector<float> row(kVocab);
  std::vector<float> probs(kVocab);
  logits(history, row);
  sampler.distribution(row, history, probs);
  long double total = 0.0L;
  for (const float prob : probs) total += prob;
  for (int32_t token = 0; token < kVocab; ++token) {
    if (probs[token] <= 0.0f) continue;
    history.push_back(token);
    ar_law_from(logits, sampler, history, n_total, mass * probs[token] / total, law);
    history.pop_back();
  }
}

// The target's AR law, straight from its logits and the Sampler (no generation loop).
Law reference_law(const SamplerConfig& config, int n_predict) {
  const Sampler sampler(config, kVocab);
  const HistoryLogits logits = target_lm();
  std::vector<int32_t> history = kPrompt;
  Law law;
  ar_law_from(logits, sampler, history, kPrompt.size() + n_predict, 1.0L, law);
  return law;
}

double max_difference(const Law& a, const Law& b) {
  long double worst = 0.0L;
  for (const auto& [tokens, prob] : a) {
    const auto other = b.find(tokens);
    worst = std::max(worst, std::fabs(prob - (other == b.end() ? 0.0L : other->second)));
  }
  for (const auto& [tokens, prob] : b) {
    if (!a.contains(tokens)) worst = std::max(worst, prob);
  }
  return static_cast<double>(worst);
}

long double total_mass(const Law& law) {
  long double total = 0.0L;
  for (const auto& [tokens, prob] : law) total += prob;
  return total;
}

struct Case {
  std::string setting;
  DrafterKind drafter;
  int k;
  int n_predict = 0;  // 0: k + 2
  Defect defect = Defect::None;
  std::string label;  // for a defect case
  spec::SampledRule rule = spec::SampledRule::kBlock;
};

struct CaseResult {
  int n_predict;
  double max_error;
  GeneratorLaw spec;
  std::set<std::pair<int, int>> auto_choices;  // Auto: every (source, drafted) it chose
};

// Runs one case through a fresh Generator and drafter (each reused by every branch).
CaseResult run_case(const Case& c) {
  const Setting& setting = setting_named(c.setting);
  const int n_predict = c.n_predict > 0 ? c.n_predict : c.k + 2;
  const int64_t n_ctx = static_cast<int64_t>(kPrompt.size()) + n_predict + c.k + 2;
  // Defect (a) reads verify rows as one ubatch; otherwise a ubatch of 2 splits the verify batch.
  const int64_t ubatch = c.defect == Defect::StalePenaltyHistory ? 8 : 2;
  kernels::ThreadPool pool(1);
  std::unique_ptr<ScriptedModel> target =
      c.defect == Defect::StalePenaltyHistory
          ? std::make_unique<StalePenaltyTarget>(target_lm(), setting.config)
          : std::make_unique<ScriptedModel>(kVocab, target_lm());
  ScriptedModel draft_model(kVocab, draft_lm());

  std::unique_ptr<spec::DraftSource> drafter;
  switch (c.drafter) {
    case DrafterKind::DraftModel:
      drafter = std::make_unique<spec::ModelDrafter>(draft_model, pool, n_ctx, ubatch);
      break;
    case DrafterKind::SelfDraft:
      drafter = std::make_unique<spec::ModelDrafter>(*target, pool, n_ctx, ubatch);
      break;
    case DrafterKind::Argmax: drafter = std::make_unique<ArgmaxDrafter>(draft_lm()); break;
    case DrafterKind::Ngram: drafter = std::make_unique<spec::NgramDrafter>(1, 2); break;
    case DrafterKind::Auto:
      drafter = std::make_unique<FreshAutoDrafter>(*target, draft_model, pool, n_ctx, ubatch, c.k);
      break;
  }
  std::unique_ptr<spec::DraftSource> shifted;
  if (c.defect == Defect::QRowOfWrongPosition) {
    shifted = std::make_unique<ShiftedQDrafter>(*drafter);
  } else if (c.defect == Defect::DropsUnsureDrafts) {
    shifted = std::make_unique<DropsUnsureDraftsDrafter>(*drafter);
  }
  std::unique_ptr<spec::Acceptor> acceptor;
  switch (c.defect) {
    case Defect::BonusFromQ:
      acceptor = std::make_unique<testing::BonusFromQAcceptor>(kVocab);
      break;
    case Defect::AcceptedCountOffByOne:
      acceptor = std::make_unique<testing::AcceptedCountOffByOneAcceptor>(kVocab);
      break;
    case Defect::ResidualWithoutClamp:
      acceptor = std::make_unique<testing::ResidualWithoutClampAcceptor>(kVocab);
      break;
    case Defect::ResidualIsP:
      acceptor = std::make_unique<testing::ResidualIsPAcceptor>(kVocab);
      break;
    default: break;
  }

  Generator gen(*target, pool, n_ctx, ubatch);
  CaseResult result;
  result.n_predict = n_predict;
  result.spec = generator_law(gen, setting.config, shifted ? shifted.get() : drafter.get(), c.k,
                              n_predict, acceptor.get(), c.rule);
  EXPECT_NEAR(static_cast<double>(total_mass(result.spec.law)), 1.0, 1e-12)
      << "the branches of a generation must sum to 1";
  result.max_error = max_difference(result.spec.law, reference_law(setting.config, n_predict));
  if (const auto* fresh = dynamic_cast<const FreshAutoDrafter*>(drafter.get())) {
    result.auto_choices = fresh->choices;
  }
  return result;
}

std::vector<Case> law_cases() {
  std::vector<Case> cases;
  for (const Setting& setting : settings()) {
    for (const DrafterKind drafter : {DrafterKind::DraftModel, DrafterKind::SelfDraft,
                                      DrafterKind::Argmax, DrafterKind::Ngram}) {
      for (int k = 1; k <= 3; ++k) cases.push_back({setting.name, drafter, k});
    }
  }
  // The token rule (the block rule runs everywhere else): both must give the target's law.
  for (const Setting& setting : settings()) {
    for (int k = 2; k <= 3; ++k)
      cases.push_back({setting.name, DrafterKind::DraftModel, k, 0, Defect::None, "",
                       spec::SampledRule::kToken});
  }
  // The auto policy: the source and k vary by cycle and by path.
  for (const Setting& setting : settings())
    cases.push_back({setting.name, DrafterKind::Auto, 3, 6});
  // Longer generations: several full cycles, then k cut short near the end.
  for (const std::string setting : {"TopKTopP", "Penalty", "AllTransforms"}) {
    for (const DrafterKind drafter : {DrafterKind::DraftModel, DrafterKind::Argmax}) {
      cases.push_back({setting, drafter, 1, 6});
      cases.push_back({setting, drafter, 2, 6});
    }
  }
  return cases;
}

class SpecExactLaw : public ::testing::TestWithParam<Case> {};

TEST_P(SpecExactLaw, GeneratedTokensFollowTheTargetArLaw) {
  const Case& c = GetParam();
  const CaseResult r = run_case(c);
  const Coverage& cov = r.spec.coverage;
  std::printf(
      "[ law      ] %-13s %-10s k=%d n=%d paths %6zu  max |spec - AR| = %.3g  (cycles per run: "
      "drafted %.3f, rejected then another %.3f, bonus %.3f)\n",
      c.setting.c_str(), drafter_label(c.drafter).c_str(), c.k, r.n_predict, r.spec.n_paths,
      r.max_error, static_cast<double>(cov.drafted), static_cast<double>(cov.rejected_then_cycle),
      static_cast<double>(cov.bonus));
  EXPECT_LE(r.max_error, kTolerance);
  EXPECT_GT(cov.drafted, c.drafter == DrafterKind::Ngram ? 0.0L : 0.99L)
      << "the drafter must have run";
  if (c.drafter == DrafterKind::Auto && c.setting != "Greedy") {
    // Over the paths, the policy drafted from at least two sources, at two block lengths or more.
    std::set<int> sources, lengths;
    for (const auto& [source, drafted] : r.auto_choices) {
      if (source != spec::kArStep && drafted > 0) sources.insert(source), lengths.insert(drafted);
    }
    EXPECT_GE(sources.size(), 2u);
    EXPECT_GE(lengths.size(), 2u);
  }
  if (c.setting == "Greedy") {
    EXPECT_EQ(r.spec.n_paths, 1u) << "greedy decoding makes no random choice";
    return;
  }
  if (c.drafter == DrafterKind::SelfDraft) {
    // p = q: every ratio is exactly 1, so every draft is kept.
    EXPECT_EQ(cov.rejected_then_cycle, 0.0L);
    EXPECT_GT(cov.bonus, 0.5L);
    return;
  }
  EXPECT_GT(cov.bonus, 0.005L) << "bonus draws must be inside the horizon";
  if (c.k < 3 && c.drafter != DrafterKind::Ngram) {
    EXPECT_GT(cov.rejected_then_cycle, 0.005L) << "rejections must be followed by a cycle";
  }
}

TEST(SpecExactLaw, ArThroughTheGeneratorFollowsTheTargetArLaw) {
  for (const Setting& setting : settings()) {
    for (const int n_predict : {3, 5}) {
      kernels::ThreadPool pool(1);
      ScriptedModel target(kVocab, target_lm());
      Generator gen(target, pool, static_cast<int64_t>(kPrompt.size()) + n_predict, 2);
      const GeneratorLaw ar = generator_law(gen, setting.config, nullptr, 1, n_predict, nullptr);
      EXPECT_LE(max_difference(ar.law, reference_law(setting.config, n_predict)), kTolerance)
          << setting.name << " n_predict " << n_predict;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SettingsDraftersK, SpecExactLaw, ::testing::ValuesIn(law_cases()),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return c.setting + "_" + drafter_label(c.drafter) + "_k" +
                                  std::to_string(c.k) +
                                  (c.n_predict > 0 ? "_n" + std::to_string(c.n_predict) : "") +
                                  (c.rule == spec::SampledRule::kToken ? "_token" : "");
                         });

// The control for defect (a): without a repetition penalty the stale history changes no row, so
// the same wrapper passes. The defect is the penalty history and nothing else the wrapper does.
TEST(SpecExactLawControl, StalePenaltyTargetIsHarmlessWithoutAPenalty) {
  const CaseResult r =
      run_case({"TopKTopP", DrafterKind::DraftModel, 3, 0, Defect::StalePenaltyHistory, "Control"});
  EXPECT_LE(r.max_error, kTolerance);
}

// Planted defects: each must break the same check (expected failures).
class SpecExactLawDefect : public ::testing::TestWithParam<Case> {};

TEST_P(SpecExactLawDefect, BreaksTheExactLawCheck) {
  const Case& c = GetParam();
  const CaseResult r = run_case(c);
  std::printf("[ defect   ] %-22s %-13s %-10s k=%d paths %6zu  max |spec - AR| = %.3g\n",
              c.label.c_str(), c.setting.c_str(), drafter_label(c.drafter).c_str(), c.k,
              r.spec.n_paths, r.max_error);
  EXPECT_GT(r.max_error, kTolerance) << "the law check did not catch the planted defect";
}

INSTANTIATE_TEST_SUITE_P(
    ExpectedFailures, SpecExactLawDefect,
    ::testing::Values(
        Case{"Penalty", DrafterKind::DraftModel, 2, 0, Defect::StalePenaltyHistory, "StalePenalty"},
        Case{"Penalty", DrafterKind::Argmax, 3, 0, Defect::StalePenaltyHistory, "StalePenalty"},
        Case{"AllTransforms", DrafterKind::DraftModel, 3, 0, Defect::StalePenaltyHistory,
             "StalePenalty"},
        Case{"TopKTopP", DrafterKind::DraftModel, 2, 0, Defect::QRowOfWrongPosition, "QRowShifted"},
        Case{"Penalty", DrafterKind::DraftModel, 3, 0, Defect::QRowOfWrongPosition, "QRowShifted"},
        Case{"TopKTopP", DrafterKind::DraftModel, 1, 0, Defect::BonusFromQ, "BonusFromQ"},
        Case{"MinP", DrafterKind::Argmax, 2, 0, Defect::BonusFromQ, "BonusFromQ"},
        Case{"TopKTopP", DrafterKind::DraftModel, 2, 0, Defect::AcceptedCountOffByOne,
             "AcceptedCountOffByOne"},
        Case{"TopKTopP", DrafterKind::Argmax, 2, 0, Defect::AcceptedCountOffByOne,
             "AcceptedCountOffByOne"},
        Case{"TopKTopP", DrafterKind::DraftModel, 2, 0, Defect::ResidualWithoutClamp,
             "ResidualWithoutClamp"},
        Case{"MinP", DrafterKind::Argmax, 2, 0, Defect::ResidualWithoutClamp,
             "ResidualWithoutClamp"},
        Case{"TopKTopP", DrafterKind::DraftModel, 2, 0, Defect::ResidualIsP, "ResidualIsP"},
        Case{"MinP", DrafterKind::Argmax, 2, 0, Defect::ResidualIsP, "ResidualIsP"},
        Case{"TopKTopP", DrafterKind::DraftModel, 3, 0, Defect::DropsUnsureDrafts,
             "DropsUnsureDrafts"},
        Case{"AllTransforms", DrafterKind::DraftModel, 2, 0, Defect::DropsUnsureDrafts,
             "DropsUnsureDrafts"}),
    [](const auto& info) {
      return info.param.label + "_" + info.param.setting + "_" + drafter_label(info.param.drafter) +
             "_k" + std::to_string(info.param.k);
    });

}  // namespace
}  // namespace augur::engine
