// Statistical check of sampled speculative decoding on a real model pair: zoo-target (q8_0)
// verified against zoo-draft (f16), temperature 0.8, top-p 0.95 (top-k 40, min-p 0.05, no
// repetition penalty), k = 3 drafts per cycle, several prompts, many short runs with fixed seeds.
//
// What is tested, per prompt (then pooled over prompts by adding statistics and degrees of
// freedom, which is valid for independent samples):
//   - exact law of the first speculative token. The first generated token g1 comes from the
//     prefill's logits exactly as in AR, so the first token that goes through acceptance is g2;
//     given g1 = a its law is Sampler::distribution over prompt + a, which one target forward
//     gives. Pearson goodness of fit of g2's counts within each g1 stratum (the strata are
//     independent multinomials given their sizes, so their statistics add); a g2 outside that
//     law's support fails outright. The AR arm runs through the same check, which validates the
//     harness itself.
//   - later tokens g3, g4, g5 (accepted drafts, residual and bonus draws, second and third
//     cycles) have no one-forward law, so their counts are compared with AR runs of the same
//     prompt by a two-sample chi-square test of homogeneity.
// Each correct arm must give p > 0.001. An acceptor with a planted defect (after a rejection it
// draws from p instead of the residual max(0, p - q)) must give p < 0.001 on the exact test.
//
// Cost: every run repeats the same prompt, so the generator and the drafter only re-evaluate its
// last token (prefix reuse); a run is then ~3 small target forwards and ~4 draft forwards.
// Prompts were picked among the 64 for a draft that often disagrees with the target at g2
// (measured over g1: mean TV(p, q) 0.49 / 0.40 / 0.47), where the defect moves the law most
// (Pearson noncentrality of the defect per run ~0.13 for each).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "model/heads/dflash.h"
#include "model/heads/eagle3.h"
#include "model/heads/nextn.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "spec/acceptance.h"
#include "spec/auto_sources.h"
#include "spec/dflash_drafter.h"
#include "spec/model_drafter.h"
#include "spec/pair_head_drafter.h"
#include "support/chi_square.h"
#include "support/model_session.h"
#include "support/mtp_targets.h"
#include "support/planted_acceptors.h"
#include "support/run_command.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace augur::engine {
namespace {

using testing::ChiSquare;

constexpr int kDraftMax = 3;
// The first cycle drafts min(k, n_predict - 2) tokens, so 5 gives it the full k: g2..g5 can all
// come from cycle 1 (g5 as its bonus) or from later cycles.
constexpr int kPredict = 5;
constexpr int kFirstLaterPosition = 2;  // g3, 0-based index into the generated tokens
constexpr std::array<size_t, 3> kPromptLines = {0, 5, 17};
constexpr int kRuns = 400;        // per prompt, for the spec arm and for the AR arm
constexpr int kDefectRuns = 250;  // per prompt, each stopped after g2 (all its test needs)
constexpr double kAlpha = 1e-3;

sampling::SamplerConfig sampler_config() {
  sampling::SamplerConfig c;  // top-k 40, min-p 0.05 and repetition penalty 1 by default
  c.temperature = 0.8f;
  c.top_p = 0.95f;
  c.repeat_penalty = 1.0f;
  return c;
}

const EogPredicate kNeverEog = [](int32_t) { return false; };

// Token counts of one arm on one prompt.
struct ArmSamples {
  explicit ArmSamples(size_t n_vocab)
      : at(kPredict, std::vector<int64_t>(n_vocab, 0)), n_vocab(n_vocab) {}
  std::vector<std::vector<int64_t>> at;  // [kPredict][n_vocab]: runs whose token i+1 was v
  std::map<int32_t, std::vector<int64_t>> second_after;  // g1 -> [n_vocab] counts of g2
  size_t n_vocab;
  // Cycles that rejected a draft (so drew from the residual) or kept every draft (so drew the
  // bonus). Each run's first cycle decides g2: from the residual when it kept no draft
  // (first_rejected), a kept draft otherwise (first_kept).
  int64_t first_rejected = 0, first_kept = 0, rejected = 0, full = 0, cycles = 0;
};

// n_kept: the generated tokens the caller will look at; a run is cancelled once it has them.
ArmSamples run_arm(Generator& gen, const std::vector<int32_t>& prompt,
                   const sampling::Sampler& sampler, uint64_t seed, int n_runs,
                   spec::DraftSource* drafter, spec::Acceptor* acceptor, int n_kept = kPredict) {
  ArmSamples s(static_cast<size_t>(sampler.n_vocab()));
  sampling::SeededRng rng(seed);  // one stream: its uniforms are i.i.d., so runs are independent
  bool first_cycle = true;
  GenerateOptions opt;
  opt.n_predict = kPredict;
  opt.ignore_eos = true;
  opt.drafter = drafter;
  opt.draft_max = kDraftMax;
  opt.acceptor = acceptor;
  opt.on_cycle = [&](const CycleInfo& cycle) {
    if (cycle.drafted == 0) return;
    const bool all_kept = cycle.accepted == cycle.drafted;
    ++s.cycles;
    ++(all_kept ? s.full : s.rejected);
    if (first_cycle) ++(cycle.accepted == 0 ? s.first_rejected : s.first_kept);
    first_cycle = false;
  };
  int n_seen = 0;
  const TokenCallback stop_when_kept = [&](int32_t) { return ++n_seen < n_kept; };
  for (int run = 0; run < n_runs; ++run) {
    first_cycle = true;
    n_seen = 0;
    const GenerateResult r = gen.generate(prompt, sampler, rng, opt, kNeverEog, stop_when_kept);
    EXPECT_EQ(static_cast<int>(r.tokens.size()), n_kept);
    if (static_cast<int>(r.tokens.size()) != n_kept) continue;
    for (size_t pos = 0; pos < r.tokens.size(); ++pos)
      ++s.at[pos][static_cast<size_t>(r.tokens[pos])];
    auto& after = s.second_after[r.tokens[0]];
    if (after.empty()) after.assign(s.n_vocab, 0);
    ++after[static_cast<size_t>(r.tokens[1])];
  }
  return s;
}

// g1 -> the exact law of g2 given g1 (Sampler::distribution over prompt + g1): one target forward
// of g1 on top of the prompt's cached rows each.
using Laws = std::map<int32_t, std::vector<double>>;
Laws second_token_laws(testing::ModelSession& target, const std::vector<int32_t>& prompt,
                       const sampling::Sampler& sampler, const std::set<int32_t>& firsts) {
  Laws laws;
  target.cache.clear();
  (void)target.last_logits(prompt);
  std::vector<float> probs(static_cast<size_t>(target.n_vocab()));
  for (const int32_t first : firsts) {
    const std::vector<float> logits = target.last_logits({first});
    std::vector<int32_t> history = prompt;
    history.push_back(first);
    sampler.distribution(logits, history, probs);
    laws[first].assign(probs.begin(), probs.end());
    target.cache.truncate(static_cast<int64_t>(prompt.size()));
  }
  return laws;
}

std::set<int32_t> firsts_of(std::initializer_list<const ArmSamples*> arms) {
  std::set<int32_t> firsts;
  for (const ArmSamples* arm : arms) {
    for (const auto& [first, counts] : arm->second_after) firsts.insert(first);
  }
  return firsts;
}

// Goodness of fit of g2 to its exact law, summed over the g1 strata.
ChiSquare second_token_fit(const ArmSamples& s, const Laws& laws) {
  std::vector<ChiSquare> strata;
  for (const auto& [first, counts] : s.second_after) {
    strata.push_back(testing::goodness_of_fit(counts, laws.at(first)));
  }
  return testing::combine(strata);
}

void print(const char* what, const ChiSquare& r) {
  std::printf("[ chi2     ] %-40s chi2 %9.2f  df %3d  p %.3g\n", what, r.statistic, r.df,
              r.p_value);
}

struct ModelPair {
  explicit ModelPair(const std::filesystem::path& target_path = testing::models_dir() /
                                                                "zoo-target-q8_0.gguf")
      : target(target_path),
        draft(model::load_model(testing::models_dir() / "zoo-draft-f16.gguf")),
        sampler(sampler_config(), static_cast<int>(target.n_vocab())) {
    const auto tok = tokenizer::Tokenizer::from_gguf(target.model->file());
    std::ifstream in(testing::models_dir() / "prompts-code.jsonl");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    size_t longest = 0;
    for (const size_t index : kPromptLines) {
      const auto text = nlohmann::json::parse(lines.at(index))["prompt"].get<std::string>();
      prompts.push_back(tok->encode(text, /*add_special=*/true, /*parse_special=*/false));
      longest = std::max(longest, prompts.back().size());
    }
    n_ctx = static_cast<int64_t>(longest) + kPredict + kDraftMax + 8;
  }
  testing::ModelSession target;  // its model, pool and a cache for the exact laws
  std::unique_ptr<model::Model> draft;
  sampling::Sampler sampler;
  std::vector<std::vector<int32_t>> prompts;
  int64_t n_ctx = 0;
};

// The AR arm of each prompt: what every drafter's arm is compared with.
std::vector<ArmSamples> ar_arms(ModelPair& m) {
  Generator gen(*m.target.model, m.target.pool, m.n_ctx, 512);
  std::vector<ArmSamples> arms;
  for (size_t p = 0; p < m.prompts.size(); ++p) {
    arms.push_back(run_arm(gen, m.prompts[p], m.sampler, 2000 + p, kRuns, nullptr, nullptr));
  }
  return arms;
}

// The exact and two-sample tests above, for speculative decoding with `drafter` against the AR
// arms of the same target (`ar`, one per prompt).
void expect_sampled_law(ModelPair& m, spec::DraftSource& drafter,
                        const std::vector<ArmSamples>& ar_of_prompt) {
  Generator gen(*m.target.model, m.target.pool, m.n_ctx, 512);
  std::vector<ChiSquare> exact_spec, exact_ar;
  std::vector<std::vector<ChiSquare>> later(kPredict - kFirstLaterPosition);
  for (size_t p = 0; p < m.prompts.size(); ++p) {
    const auto& prompt = m.prompts[p];
    const ArmSamples spec = run_arm(gen, prompt, m.sampler, 1000 + p, kRuns, &drafter, nullptr);
    const ArmSamples& ar = ar_of_prompt.at(p);
    // Every path of the acceptance rule must have been taken: g2 from the residual and from a
    // kept draft, and bonus draws.
    EXPECT_GT(spec.first_rejected, 0) << "prompt " << p;
    EXPECT_GT(spec.first_kept, 0) << "prompt " << p;
    EXPECT_GT(spec.full, 0) << "prompt " << p;
    std::printf(
        "[ spec     ] prompt line %zu: %lld cycles, %lld rejected a draft, %lld kept all "
        "(first cycle: g2 from the residual %lld, a kept draft %lld)\n",
        kPromptLines[p], static_cast<long long>(spec.cycles), static_cast<long long>(spec.rejected),
        static_cast<long long>(spec.full), static_cast<long long>(spec.first_rejected),
        static_cast<long long>(spec.first_kept));

    const Laws laws = second_token_laws(m.target, prompt, m.sampler, firsts_of({&spec, &ar}));
    exact_spec.push_back(second_token_fit(spec, laws));
    exact_ar.push_back(second_token_fit(ar, laws));
    print("  g2 | g1 exact, speculative", exact_spec.back());
    print("  g2 | g1 exact, AR (harness check)", exact_ar.back());
    for (int pos = kFirstLaterPosition; pos < kPredict; ++pos) {
      later[static_cast<size_t>(pos - kFirstLaterPosition)].push_back(
          testing::two_sample(spec.at[static_cast<size_t>(pos)], ar.at[static_cast<size_t>(pos)]));
      const std::string what = "  g" + std::to_string(pos + 1) + " speculative vs AR";
      print(what.c_str(), later[static_cast<size_t>(pos - kFirstLaterPosition)].back());
    }
  }

  std::printf("[ chi2     ] pooled over %zu prompts x %d runs per arm:\n", m.prompts.size(), kRuns);
  const ChiSquare spec_fit = testing::combine(exact_spec);
  const ChiSquare ar_fit = testing::combine(exact_ar);
  print("g2 | g1 exact, speculative", spec_fit);
  print("g2 | g1 exact, AR (harness check)", ar_fit);
  EXPECT_GT(spec_fit.p_value, kAlpha);
  EXPECT_GT(ar_fit.p_value, kAlpha);
  EXPECT_GE(spec_fit.df, 10);  // enough bins for the test to see anything
  for (int pos = kFirstLaterPosition; pos < kPredict; ++pos) {
    const ChiSquare r = testing::combine(later[static_cast<size_t>(pos - kFirstLaterPosition)]);
    const std::string what = "g" + std::to_string(pos + 1) + " speculative vs AR";
    print(what.c_str(), r);
    EXPECT_GT(r.p_value, kAlpha) << what;
    EXPECT_GE(r.df, 10) << what;
  }
}

// expect_sampled_law for a drafter trained for zoo-target (models/DRAFTERS.md): `file` under
// models/, loaded as a Head and run by a Drafter.
template <class Head, class Drafter>
void expect_trained_drafter_law(ModelPair& m, const std::vector<ArmSamples>& ar, const char* name,
                                const char* file) {
  SCOPED_TRACE(name);
  std::printf("[ drafter  ] %s\n", name);
  const auto head = Head::load(testing::source_dir() / "models" / file, *m.target.model);
  Drafter drafter(*head, m.target.pool, m.n_ctx, 512);
  expect_sampled_law(m, drafter, ar);
}

// The auto policy with fixed costs instead of timed ones (for its estimates and for what each
// cycle took), so that its choices, and the test's statistics, depend only on the seeds and
// repeat from run to run: a target forward of m rows
// costs 1 + 0.1 (m - 1) ms, a draft token 0.1 ms from the draft model, d/8 of a target forward
// from layer-skip at depth d, nothing from n-gram lookup. It still changes source and k as its
// acceptance estimates move.
class FixedCostPolicy final : public spec::DraftPolicy {
 public:
  using DraftPolicy::DraftPolicy;

 private:
  double verify_seconds(int rows) const override { return 1e-3 * (1 + 0.1 * (rows - 1)); }
  double draft_seconds(int source, int k) const override {
    const std::string& name = sources()[static_cast<size_t>(source)];
    if (name == "ngram") return 0;
    if (name.starts_with("layerskip:")) return k * 1e-3 * std::stoi(name.substr(10)) / 8;
    return k * 1e-4;
  }
  double other_seconds(int) const override { return 5e-5; }
  bool costs_known() const override { return true; }
  double outcome_seconds(const spec::CyclePlan& plan,
                         const spec::CycleOutcome& outcome) const override {
    return cycle_seconds(plan.source, outcome.drafted);
  }
};

// The draft model, the auto policy, an EAGLE-3 head and a DFlash drafter on zoo-target, each
// against one AR arm per prompt: an arm costs as much as a drafter's, and one process runs it once.
TEST(SpecStatistics, SampledTokensOfEachDrafterFollowTheArLaw) {
  ModelPair m;
  const std::vector<ArmSamples> ar = ar_arms(m);
  {
    SCOPED_TRACE("draft model");
    std::printf("[ drafter  ] zoo-draft\n");
    spec::ModelDrafter drafter(*m.draft, m.target.pool, m.n_ctx, 512);
    expect_sampled_law(m, drafter, ar);
  }
  {
    // The auto policy over the draft model, n-gram lookup and layer-skip: every cycle may
    // change the source and k, and the law must not notice.
    SCOPED_TRACE("auto policy");
    std::printf("[ drafter  ] auto\n");
    auto [sources, labels] = spec::make_auto_sources(spec::all_auto_sources(true), *m.target.model,
                                                     m.draft.get(), m.target.pool, m.n_ctx, 512);
    spec::AutoDrafter drafter(std::move(sources),
                              std::make_unique<FixedCostPolicy>(std::move(labels), kDraftMax));
    std::ostringstream log;  // one JSON line per cycle of every run
    drafter.set_log(&log);
    expect_sampled_law(m, drafter, ar);
    // Over all runs it drafted from more than one source, at more than one length.
    std::map<std::string, int64_t> cycles_by_source;
    std::set<int> lengths;
    std::istringstream lines(log.str());
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line);
      if (j["drafted"].get<int>() == 0) continue;
      ++cycles_by_source[j["source"].get<std::string>()];
      lengths.insert(j["drafted"].get<int>());
    }
    std::printf("[ auto     ] drafting cycles by source:");
    for (const auto& [source, n] : cycles_by_source) {
      std::printf(" %s %lld", source.c_str(), static_cast<long long>(n));
    }
    std::printf("; %zu block lengths\n", lengths.size());
    EXPECT_GE(cycles_by_source.size(), 2u);
    EXPECT_GE(lengths.size(), 2u);
  }
  // An EAGLE-3 head drafts from its own distribution with a soft q, reading the target's
  // features captured in the verify forwards. A DFlash drafter draws every draft of a block from
  // its own row's distribution, none conditioned on the drafts before it: the acceptance rule
  // needs only that each q_j is the law d_j was drawn from.
  expect_trained_drafter_law<model::heads::Eagle3, spec::PairHeadDrafter>(
      m, ar, "eagle3", "zoo-target-eagle3-f16.gguf");
  expect_trained_drafter_law<model::heads::DFlash, spec::DFlashDrafter>(
      m, ar, "dflash", "zoo-target-dflash-f16.gguf");
}

// A target's MTP layer (here an echo layer appended to zoo-target, support/mtp_targets.h) drafts
// from its own distribution, fed the target's final hidden state and then its own.
TEST(SpecStatistics, SampledMtpTokensFollowTheArLaw) {
  const auto path = testing::temp_path("mtp-law.gguf");
  testing::write_target_with_echo_mtp(testing::models_dir() / "zoo-target-q8_0.gguf", path);
  ModelPair m(path);
  std::filesystem::remove(path);  // the mapping stays valid
  const auto head = model::heads::NextN::load(*m.target.model);
  spec::PairHeadDrafter drafter(*head, m.target.pool, m.n_ctx, 512);
  expect_sampled_law(m, drafter, ar_arms(m));
}

TEST(SpecStatistics, ExactTestRejectsResidualDrawnFromTarget) {
  ModelPair m;
  Generator gen(*m.target.model, m.target.pool, m.n_ctx, 512);
  spec::ModelDrafter drafter(*m.draft, m.target.pool, m.n_ctx, 512);
  testing::ResidualIsPAcceptor defective(static_cast<int>(m.target.n_vocab()));
  std::vector<ChiSquare> exact;
  for (size_t p = 0; p < m.prompts.size(); ++p) {
    const auto& prompt = m.prompts[p];
    const ArmSamples bad =
        run_arm(gen, prompt, m.sampler, 3000 + p, kDefectRuns, &drafter, &defective, 2);
    EXPECT_GT(bad.first_rejected, 0) << "the defect is only reached after a rejection";
    const Laws laws = second_token_laws(m.target, prompt, m.sampler, firsts_of({&bad}));
    exact.push_back(second_token_fit(bad, laws));
    print("  g2 | g1 exact, residual-is-p defect", exact.back());
  }
  const ChiSquare r = testing::combine(exact);
  std::printf("[ chi2     ] pooled over %zu prompts x %d runs:\n", m.prompts.size(), kDefectRuns);
  print("g2 | g1 exact, residual-is-p defect", r);
  EXPECT_LT(r.p_value, kAlpha);
}

}  // namespace
}  // namespace augur::engine
