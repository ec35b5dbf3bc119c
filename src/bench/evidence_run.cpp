#include "bench/evidence_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "bench/evidence_cache_memory.h"
#include "bench/statistics.h"
#include "spec/head_drafters.h"

namespace augur::bench::evidence {

namespace {

using nlohmann::json;

constexpr std::string_view kDecodeMetric = "decode_tok_s_median";
constexpr std::string_view kDecodeOnly = "decode_only";
constexpr size_t kMinRepeats = 5;        // distinct measured repeats per (arm, prompt) in a claim
constexpr double kMinDecodeTokens = 32;  // median n_gen behind a claim
constexpr double kMaxPrefillSpread = 3;  // max/min prefill_s of one prompt
// A cycle commits at most tau tokens for one verify forward that costs at least one AR step, so
// speculative decoding cannot beat AR by more than tau; the slack absorbs machine noise.
constexpr double kTauBoundSlack = 1.1;

using Claims = std::vector<Speedup>;

// Arms that the claims compare, in first-claim order, with why each is in.
std::vector<std::pair<std::string, std::string>> compared_arms(const Claims& claims) {
  std::vector<std::pair<std::string, std::string>> result;
  for (const Speedup& claim : claims) {
    for (const std::string* name : {&claim.subject, &claim.baseline}) {
      const bool listed = std::any_of(result.begin(), result.end(),
                                      [&](const auto& entry) { return entry.first == *name; });
      if (listed) continue;
      result.emplace_back(
          *name, fmt::format("compared in speedup '{}' over '{}'", claim.subject, claim.baseline));
    }
  }
  return result;
}

std::map<std::string, std::vector<const Sample*>> by_prompt(const std::vector<const Sample*>& in) {
  std::map<std::string, std::vector<const Sample*>> out;
  for (const Sample* s : in) out[s->prompt].push_back(s);
  return out;
}

// Measured samples of two arms with the same (prompt, repeat).
std::vector<std::pair<const Sample*, const Sample*>> matched(const RunReport& run,
                                                             const std::string& a,
                                                             const std::string& b) {
  std::map<std::pair<std::string, int64_t>, const Sample*> of_b;
  for (const Sample* s : run.of(b)) of_b[{s->prompt, s->repeat}] = s;
  std::vector<std::pair<const Sample*, const Sample*>> out;
  for (const Sample* s : run.of(a)) {
    const auto it = of_b.find({s->prompt, s->repeat});
    if (it != of_b.end()) out.emplace_back(s, it->second);
  }
  return out;
}

const Arm* ar_arm(const RunReport& run) {
  for (const Arm& arm : run.arms) {
    if (arm.config.kind == "ar") return &arm;
  }
  return nullptr;
}

// ---- the rules ----

void check_spec_ran(const RunReport& run, const Claims& claims, bool every_arm,
                    std::vector<Violation>& out) {
  std::set<std::string> in_claims;
  for (const Speedup& claim : claims) in_claims.insert(claim.subject);
  for (const Arm& arm : run.arms) {
    if (arm.config.kind != "spec" || (!every_arm && in_claims.count(arm.name) == 0)) continue;
    const auto samples = run.of(arm.name);
    int64_t drafted = 0;
    std::vector<const Sample*> idle;
    for (const Sample* s : samples) {
      drafted += s->drafted;
      if (s->drafted == 0 || s->cycles == 0) idle.push_back(s);
    }
    if (samples.empty()) {
      out.push_back(
          {"SPEC_NEVER_RAN", fmt::format("spec arm '{}' has no measured samples", arm.name)});
    } else if (drafted == 0) {
      out.push_back({"SPEC_NEVER_RAN",
                     fmt::format("spec arm '{}': none of its {} measured samples drafted a token; "
                                 "it measured plain decoding",
                                 arm.name, samples.size())});
    } else if (in_claims.count(arm.name) != 0 && !idle.empty()) {
      // A claim's median must come from speculative decoding, not from samples of plain decoding.
      out.push_back(
          {"SPEC_NEVER_RAN",
           fmt::format("spec arm '{}' is claimed, but {} of its {} measured samples "
                       "drafted nothing; first: samples[{}] {}",
                       arm.name, idle.size(), samples.size(), idle[0]->index, idle[0]->label())});
    }
  }
}

void check_baseline_as_subject(const RunReport& run, const Claims& claims, bool every_arm,
                               std::vector<Violation>& out) {
  if (every_arm) {
    for (const Arm& arm : run.arms) {
      if (arm.config.kind == "ar" && arm.role == "subject") {
        out.push_back({"BASELINE_AS_SUBJECT",
                       fmt::format("ar arm '{}' has role 'subject'; autoregressive decoding is the "
                                   "baseline",
                                   arm.name)});
      }
    }
  }
  for (const Speedup& claim : claims) {
    if (run.arm(claim.subject).config.kind == "ar") {
      out.push_back({"BASELINE_AS_SUBJECT",
                     fmt::format("summary.speedups[{}] claims a speedup for ar arm '{}' over '{}'",
                                 claim.index, claim.subject, claim.baseline)});
    }
  }
}

// Why two arms are the same path, judged from their configuration and their data; "" if not.
std::string same_path(const RunReport& run, const std::string& a, const std::string& b) {
  if (a == b) return "the same arm";
  const ArmConfig& ca = run.arm(a).config;
  const ArmConfig& cb = run.arm(b).config;
  if (ca == cb) return fmt::format("the same configuration ({})", ca.text());
  const auto pairs = matched(run, a, b);
  if (pairs.empty()) return "";
  const bool same_behaviour = std::all_of(pairs.begin(), pairs.end(), [](const auto& pair) {
    const Sample& x = *pair.first;
    const Sample& y = *pair.second;
    auto trimmed = [](std::vector<int64_t> hist) {
      while (!hist.empty() && hist.back() == 0) hist.pop_back();
      return hist;
    };
    return x.tokens == y.tokens && x.cycles == y.cycles && x.drafted == y.drafted &&
           x.accepted == y.accepted && trimmed(x.accept_hist) == trimmed(y.accept_hist);
  });
  if (same_behaviour) {
    return fmt::format(
        "the same behaviour: in all {} matched samples they decoded the same "
        "tokens with the same drafting",
        pairs.size());
  }
  for (const auto& [x, y] : pairs) {
    if (same_measurement(x->decode_s, y->decode_s)) {
      return fmt::format("copied timings: samples[{}] and samples[{}] have the same decode_s {:g}",
                         x->index, y->index, x->decode_s);
    }
  }
  if (pairs.size() >= 2) {
    for (const auto field : {&Sample::decode_s, &Sample::prefill_s}) {
      double lo = std::numeric_limits<double>::infinity(), hi = 0;
      for (const auto& [x, y] : pairs) {
        const double ratio = y->*field > 0 ? x->*field / (y->*field) : -1;
        lo = std::min(lo, ratio);
        hi = std::max(hi, ratio);
      }
      if (lo > 0 && same_measurement(lo, hi)) {
        return fmt::format("rescaled copies: {} of every matched sample is {:.9g} x the other's",
                           field == &Sample::decode_s ? "decode_s" : "prefill_s", lo);
      }
    }
  }
  return "";
}

void check_self_comparison(const RunReport& run, const Claims& claims,
                           std::vector<Violation>& out) {
  for (const Speedup& claim : claims) {
    const std::string why = same_path(run, claim.subject, claim.baseline);
    if (why.empty()) continue;
    out.push_back({"SELF_COMPARISON",
                   fmt::format("summary.speedups[{}] compares '{}' with '{}', which are {}",
                               claim.index, claim.subject, claim.baseline, why)});
  }
}

// Repeats are distinct measurements: a copied sample (the same decode_s) is not a repeat.
void check_samples(const RunReport& run, const Claims& claims, std::vector<Violation>& out) {
  const auto compared = compared_arms(claims);
  std::set<std::string> prompts;  // every prompt of the run: an arm that skipped one differs
  for (const Sample& s : run.samples) prompts.insert(s.prompt);
  for (const auto& [arm, why] : compared) {
    const auto grouped = by_prompt(run.of(arm));
    std::vector<std::string> short_prompts;  // "'p01' (4)"
    for (const std::string& prompt : prompts) {
      std::vector<double> distinct;
      if (const auto it = grouped.find(prompt); it != grouped.end()) {
        for (const Sample* s : it->second) {
          const bool copy = std::any_of(distinct.begin(), distinct.end(),
                                        [&](double d) { return same_measurement(d, s->decode_s); });
          if (!copy) distinct.push_back(s->decode_s);
        }
      }
      if (distinct.size() < kMinRepeats) {
        short_prompts.push_back(fmt::format("'{}' ({})", prompt, distinct.size()));
      }
    }
    if (grouped.empty()) {
      out.push_back({"SAMPLES", fmt::format("arm '{}' ({}) has no measured samples", arm, why)});
    } else if (!short_prompts.empty()) {
      out.push_back({"SAMPLES", fmt::format("arm '{}' ({}) has fewer than {} distinct measured "
                                            "repeats for {} prompt(s): {}",
                                            arm, why, kMinRepeats, short_prompts.size(),
                                            fmt::join(short_prompts, ", "))});
    }
  }
}

void check_decode_tokens(const RunReport& run, const Claims& claims, std::vector<Violation>& out) {
  for (const auto& [arm, why] : compared_arms(claims)) {
    std::vector<double> n_gen;
    for (const Sample* s : run.of(arm)) n_gen.push_back(double(s->n_gen));
    if (n_gen.empty()) continue;  // SAMPLES reports it
    if (const double med = median(n_gen); med < kMinDecodeTokens) {
      out.push_back({"DECODE_TOKENS",
                     fmt::format("arm '{}' ({}) decodes a median of {:g} tokens per measured "
                                 "sample; a speed claim needs at least {:g}",
                                 arm, why, med, kMinDecodeTokens)});
    }
  }
}

void check_decode_only(const RunReport& run, const Claims& claims, bool with_summary,
                       std::vector<Violation>& out) {
  for (const Speedup& claim : claims) {
    if (claim.metric != kDecodeMetric) {
      out.push_back(
          {"DECODE_ONLY_MISSING",
           fmt::format("summary.speedups[{}] ('{}' over '{}') uses metric '{}'; only "
                       "'{}' is a claim",
                       claim.index, claim.subject, claim.baseline, claim.metric, kDecodeMetric)});
    }
  }
  if (!with_summary) return;
  for (const auto& [arm, why] : compared_arms(claims)) {
    const auto it = run.summary_arms.find(arm);
    const bool has_median = it != run.summary_arms.end() && it->second->contains("decode_tok_s") &&
                            (*it->second)["decode_tok_s"].is_object() &&
                            (*it->second)["decode_tok_s"].contains("median");
    if (!has_median) {
      out.push_back({"DECODE_ONLY_MISSING",
                     fmt::format("arm '{}' ({}) has no summary decode_tok_s.median", arm, why)});
    }
  }
}

void check_speedup_value(const RunReport& run, const Claims& claims, std::vector<Violation>& out) {
  for (const Speedup& claim : claims) {
    const auto subject = measured_decode_median(run, claim.subject);
    const auto baseline = measured_decode_median(run, claim.baseline);
    if (claim.metric != kDecodeMetric || !subject || !baseline || *baseline <= 0) continue;
    const double want = *subject / *baseline;
    if (!close(claim.value, want)) {
      out.push_back({"SPEEDUP_VALUE",
                     fmt::format("summary.speedups[{}] claims {:g}x for '{}' over '{}' but the "
                                 "measured samples give {:g}x",
                                 claim.index, claim.value, claim.subject, claim.baseline, want)});
    }
  }
}

// The subject's speed over the run's AR arm cannot exceed the tokens it commits per verify.
void check_speedup_bound(const RunReport& run, const Claims& claims, std::vector<Violation>& out) {
  const Arm* ar = ar_arm(run);
  if (ar == nullptr) return;
  const auto ar_median = measured_decode_median(run, ar->name);
  if (!ar_median || *ar_median <= 0) return;
  for (const Speedup& claim : claims) {
    if (run.arm(claim.subject).config.kind != "spec") continue;
    const auto subject = measured_decode_median(run, claim.subject);
    int64_t cycles = 0, committed = 0;
    for (const Sample* s : run.of(claim.subject)) {
      cycles += s->cycles;
      committed += s->accepted + s->cycles;
    }
    if (!subject || cycles == 0) continue;  // SPEC_NEVER_RAN / SAMPLES report it
    const double tau = double(committed) / double(cycles);
    const double over_ar = *subject / *ar_median;
    if (over_ar > kTauBoundSlack * tau) {
      out.push_back(
          {"SPEEDUP_BOUND",
           fmt::format("summary.speedups[{}]: '{}' runs {:.3g}x AR '{}' while its "
                       "samples commit {:.3g} tokens per verify forward; speculative "
                       "decoding cannot beat AR by more than that (x {:g} for noise)",
                       claim.index, claim.subject, over_ar, ar->name, tau, kTauBoundSlack)});
    }
  }
}

void check_scope(const RunReport& run, const Claims& claims, std::vector<Violation>& out) {
  for (const auto& [arm, why] : compared_arms(claims)) {
    const auto samples = run.of(arm, /*with_warmups=*/true);
    std::vector<const Sample*> off;
    std::set<std::string> scopes;
    for (const Sample* s : samples) {
      scopes.insert(s->timing_scope);
      if (s->timing_scope != kDecodeOnly) off.push_back(s);
    }
    if (off.empty()) continue;
    out.push_back(
        {"SCOPE_MISMATCH",
         fmt::format("arm '{}' ({}): {} of {} samples are not timed '{}' (scopes seen: "
                     "{}); first: samples[{}] {} is '{}'",
                     arm, why, off.size(), samples.size(), kDecodeOnly, fmt::join(scopes, ", "),
                     off[0]->index, off[0]->label(), off[0]->timing_scope)});
  }
}

void check_prefill_variance(const RunReport& run, const Claims& claims,
                            std::vector<Violation>& out) {
  if (claims.empty()) return;  // noise only matters to a claim
  // Every arm: prefill noise on any arm says the machine was noisy while the run measured.
  for (const Arm& arm : run.arms) {
    size_t n_over = 0;
    double worst = 0, worst_lo = 0, worst_hi = 0;
    std::string worst_prompt;
    for (const auto& [prompt, samples] : by_prompt(run.of(arm.name))) {
      double lo = samples[0]->prefill_s, hi = samples[0]->prefill_s;
      for (const Sample* s : samples) {
        lo = std::min(lo, s->prefill_s);
        hi = std::max(hi, s->prefill_s);
      }
      const double spread =
          hi == 0 ? 1 : (lo == 0 ? std::numeric_limits<double>::infinity() : hi / lo);
      if (spread <= kMaxPrefillSpread) continue;
      ++n_over;
      if (spread > worst)
        std::tie(worst, worst_lo, worst_hi, worst_prompt) = std::tuple(spread, lo, hi, prompt);
    }
    if (n_over == 0) continue;
    out.push_back({"PREFILL_VARIANCE",
                   fmt::format("arm '{}': prefill_s of prompt '{}' ranges {:g} .. {:g} s over its "
                               "measured samples (spread {:.3g} > {:g}; {} prompt(s) over the "
                               "limit); too noisy for a speed claim",
                               arm.name, worst_prompt, worst_lo, worst_hi, worst, kMaxPrefillSpread,
                               n_over)});
  }
}

std::string token_at(const std::vector<int64_t>& tokens, size_t pos) {
  return pos < tokens.size() ? fmt::format("{}", tokens[pos]) : std::string("end");
}

// `arms`: only findings on these arms (empty: every arm).
void check_equivalence(const RunReport& run, const std::set<std::string>& arms,
                       std::vector<Violation>& out) {
  if (!decodes_deterministically(run)) return;
  const bool greedy_config = run.config.temperature <= 0 || run.config.top_k == 1;
  const std::string why = greedy_config ? ""
                                        : " (the run decodes deterministically: every AR "
                                          "round of every prompt gave the same tokens)";
  if (ar_arm(run) == nullptr) {
    out.push_back({"EQUIVALENCE",
                   "the run decodes deterministically but has no ar arm: nothing "
                   "shows that its arms produce AR's tokens"});
    return;
  }
  struct Finding {
    size_t n_differ = 0;
    const Mismatch* first = nullptr;
  };
  const auto mismatches = equivalence_mismatches(run);
  std::map<std::pair<std::string, std::string>, Finding> findings;
  std::vector<std::pair<std::string, std::string>> order;
  for (const Mismatch& m : mismatches) {
    if (!arms.empty() && arms.count(m.sample->arm) == 0) continue;
    const auto key = std::pair(m.sample->arm, m.sample->prompt);
    Finding& f = findings[key];
    if (f.n_differ++ == 0) {
      f.first = &m;
      order.push_back(key);
    }
  }
  for (const auto& key : order) {
    const Finding& f = findings.at(key);
    const Sample& s = *f.first->sample;
    const Sample& ref = *f.first->reference;
    const bool is_ar = run.arm(s.arm).config.kind == "ar";
    out.push_back(
        {"EQUIVALENCE",
         fmt::format("arm '{}' prompt '{}': {} greedy samples differ from {} (arm '{}' {}){}; "
                     "first: samples[{}] repeat {}{} at token {} ({} vs {}){}",
                     s.arm, s.prompt, f.n_differ, is_ar ? "the first AR sample" : "AR", ref.arm,
                     ref.label(), why, s.index, s.repeat, s.warmup ? " (warm-up)" : "", f.first->at,
                     token_at(s.tokens, f.first->at), token_at(ref.tokens, f.first->at),
                     is_ar ? "; the AR baseline is not deterministic" : "")});
  }
}

// A sample's own arithmetic: rates from times and counts, drafting counts that add up.
std::string sample_arithmetic(const RunReport& run, const Sample& s) {
  const double decode_tok_s = s.decode_s > 0 && s.n_gen > 1 ? double(s.n_gen - 1) / s.decode_s : 0;
  if (!close(s.decode_tok_s, decode_tok_s)) {
    return fmt::format("decode_tok_s {:g} is not (n_gen - 1) / decode_s = {:g}", s.decode_tok_s,
                       decode_tok_s);
  }
  const double prefill_tok_s = s.prefill_s > 0 ? double(s.n_prompt) / s.prefill_s : 0;
  if (!close(s.prefill_tok_s, prefill_tok_s)) {
    return fmt::format("prefill_tok_s {:g} is not n_prompt / prefill_s = {:g}", s.prefill_tok_s,
                       prefill_tok_s);
  }
  if (s.draft_s + s.verify_s > s.decode_s * (1 + 1e-6)) {
    return fmt::format("draft_s {:g} + verify_s {:g} exceed decode_s {:g}", s.draft_s, s.verify_s,
                       s.decode_s);
  }
  const double tau = s.cycles > 0 ? double(s.accepted + s.cycles) / double(s.cycles) : 0;
  if (!close(s.tau, tau)) {
    return fmt::format("tau {:g} is not (accepted + cycles) / cycles = {:g}", s.tau, tau);
  }
  const ArmConfig& arm = run.arm(s.arm).config;
  if (arm.kind != "spec") return "";
  int64_t hist_cycles = 0, hist_accepted = 0;
  for (size_t j = 0; j < s.accept_hist.size(); ++j) {
    hist_cycles += s.accept_hist[j];
    hist_accepted += int64_t(j) * s.accept_hist[j];
  }
  if (hist_cycles != s.cycles || hist_accepted != s.accepted) {
    return fmt::format(
        "accept_hist counts {} cycles keeping {} drafts, but the sample says {} "
        "cycles, {} accepted",
        hist_cycles, hist_accepted, s.cycles, s.accepted);
  }
  if (s.accepted > s.drafted || s.drafted > s.cycles * arm.draft_max) {
    return fmt::format("{} drafted tokens in {} cycles of at most {} with {} accepted", s.drafted,
                       s.cycles, arm.draft_max, s.accepted);
  }
  // Every token after the first comes from a cycle (its accepted drafts plus one of its own);
  // without end-of-generation stops, nothing committed goes unreported.
  const int64_t committed = s.accepted + s.cycles;
  if (s.n_gen > 0 &&
      (committed < s.n_gen - 1 || (run.config.ignore_eos && committed != s.n_gen - 1))) {
    return fmt::format(
        "its cycles commit {} tokens (accepted + cycles), but it generated {} after "
        "the first",
        committed, s.n_gen - 1);
  }
  return "";
}

void check_derived_values(const RunReport& run, std::vector<Violation>& out) {
  for (const Arm& arm : run.arms) {
    size_t n_wrong = 0;
    std::string first;
    for (const Sample* s : run.of(arm.name, /*with_warmups=*/true)) {
      const std::string wrong = sample_arithmetic(run, *s);
      if (wrong.empty()) continue;
      if (n_wrong++ == 0) first = fmt::format("samples[{}] {}: {}", s->index, s->label(), wrong);
    }
    if (n_wrong > 0) {
      out.push_back({"DERIVED_VALUE", fmt::format("arm '{}': {} samples whose figures do not "
                                                  "follow from their own data; first: {}",
                                                  arm.name, n_wrong, first)});
    }
    const auto it = run.summary_arms.find(arm.name);
    if (it == run.summary_arms.end()) continue;
    json derived = derive_arm_summary(run, arm.name);
    derived.erase("peak_rss_bytes");  // memory figures belong to MEMORY_CLAIM
    derived.erase("arm_bytes");
    if (const auto diff = summary_difference(derived, *it->second, ""); !diff.empty()) {
      out.push_back({"DERIVED_VALUE", fmt::format("summary of arm '{}': {}", arm.name, diff)});
    }
  }
}

// Per-sample memory: peak_rss_bytes is the resident high-water mark from a reset at the sample's
// start; arm_bytes what the arm's models, caches and buffers hold (constant for an arm).
void check_memory_claim(const RunReport& run, std::vector<Violation>& out) {
  const int64_t target_bytes = run.model_bytes.count("target") ? run.model_bytes.at("target") : 0;
  const int64_t draft_bytes = run.model_bytes.count("draft") ? run.model_bytes.at("draft") : 0;
  const int64_t head_bytes = run.model_bytes.count("head") ? run.model_bytes.at("head") : 0;
  const Arm* ar = ar_arm(run);
  std::optional<int64_t> ar_bytes;
  if (ar != nullptr) {
    for (const Sample* s : run.of(ar->name, true)) {
      if (s->arm_bytes) ar_bytes = std::max(ar_bytes.value_or(0), *s->arm_bytes);
    }
  }
  for (const Arm& arm : run.arms) {
    const auto samples = run.of(arm.name, /*with_warmups=*/true);
    std::vector<std::string> problems;
    int64_t max_rss = 0;
    std::set<int64_t> arm_bytes;
    for (const Sample* s : samples) {
      if (!s->peak_rss_bytes || *s->peak_rss_bytes <= 0) {
        problems.push_back(fmt::format(
            "samples[{}] {} has peak_rss_bytes {}", s->index, s->label(),
            s->peak_rss_bytes ? std::to_string(*s->peak_rss_bytes) : std::string("missing")));
      } else {
        max_rss = std::max(max_rss, *s->peak_rss_bytes);
      }
      if (!s->arm_bytes || *s->arm_bytes <= 0) {
        problems.push_back(
            fmt::format("samples[{}] {} has arm_bytes {}", s->index, s->label(),
                        s->arm_bytes ? std::to_string(*s->arm_bytes) : std::string("missing")));
      } else {
        arm_bytes.insert(*s->arm_bytes);
      }
    }
    if (arm_bytes.size() > 1) {
      problems.push_back(
          fmt::format("arm_bytes differs between its samples ({} .. {}), but an "
                      "arm's allocations do not change",
                      *arm_bytes.begin(), *arm_bytes.rbegin()));
    }
    const bool reads_draft =
        arm.config.drafter == "model" ||
        (arm.config.drafter == "auto" && arm.config.sources.find("model") != std::string::npos);
    // An MTP layer lives in the target's file: it has no head file of its own.
    std::string_view head_kind;
    const bool reads_head =
        (spec::reads_head(arm.config.drafter, &head_kind) && head_kind != "mtp") ||
        (arm.config.drafter == "auto" && (arm.config.sources.find("eagle3") != std::string::npos ||
                                          arm.config.sources.find("dflash") != std::string::npos));
    if (reads_head && !run.model_bytes.count("head")) {
      problems.push_back("its drafter reads a drafter head, but no model has the role 'head'");
    }
    const int64_t need =
        target_bytes + (reads_draft ? draft_bytes : 0) + (reads_head ? head_bytes : 0);
    if (!arm_bytes.empty() && *arm_bytes.begin() < need) {
      problems.push_back(
          fmt::format("arm_bytes {} is less than the {} bytes of the model file(s) "
                      "it reads",
                      *arm_bytes.begin(), need));
    }
    check_cache_memory(run, arm, need, problems);
    if (arm.config.kind == "spec" && ar_bytes && !arm_bytes.empty() &&
        *arm_bytes.begin() < *ar_bytes) {
      problems.push_back(
          fmt::format("arm_bytes {} is less than the ar arm's {}, but a spec arm "
                      "holds the target's session and a drafter",
                      *arm_bytes.begin(), *ar_bytes));
    }
    if (const auto it = run.summary_arms.find(arm.name); it != run.summary_arms.end()) {
      const json& summary = *it->second;
      const json& rss = summary.contains("peak_rss_bytes") ? summary["peak_rss_bytes"] : json();
      if (!rss.is_number_integer() || rss.get<int64_t>() != max_rss) {
        problems.push_back(
            fmt::format("the summary's peak_rss_bytes is {}, but its samples' "
                        "maximum is {}",
                        rss.dump(), max_rss));
      }
      const json& bytes = summary.contains("arm_bytes") ? summary["arm_bytes"] : json();
      if (arm_bytes.size() == 1 &&
          (!bytes.is_number_integer() || bytes.get<int64_t>() != *arm_bytes.begin())) {
        problems.push_back(fmt::format("the summary's arm_bytes is {}, but its samples say {}",
                                       bytes.dump(), *arm_bytes.begin()));
      }
    }
    if (problems.empty()) continue;
    out.push_back({"MEMORY_CLAIM",
                   fmt::format("arm '{}': {}{}", arm.name, problems[0],
                               problems.size() > 1 ? fmt::format(" ({} more)", problems.size() - 1)
                                                   : std::string())});
  }
}

// The rules about claims, in the doc's order. `whole_report`: also the parts that judge every arm
// and the report's summary (a harness deciding one claim has not written them yet).
void check_claims(const RunReport& run, const Claims& claims, bool whole_report,
                  std::vector<Violation>& out) {
  check_spec_ran(run, claims, whole_report, out);
  check_baseline_as_subject(run, claims, whole_report, out);
  check_self_comparison(run, claims, out);
  check_samples(run, claims, out);
  check_decode_tokens(run, claims, out);
  check_decode_only(run, claims, whole_report, out);
  check_speedup_value(run, claims, out);
  check_speedup_bound(run, claims, out);
  check_scope(run, claims, out);
  check_prefill_variance(run, claims, out);
}

}  // namespace

std::optional<double> measured_decode_median(const RunReport& run, const std::string& arm) {
  std::vector<double> rates;
  for (const Sample* s : run.of(arm)) rates.push_back(s->decode_tok_s);
  if (rates.empty()) return std::nullopt;
  return median(rates);
}

std::vector<Mismatch> equivalence_mismatches(const RunReport& run) {
  std::vector<Mismatch> out;
  if (!decodes_deterministically(run)) return out;
  std::map<std::string, const Sample*> reference;  // prompt -> first AR sample
  for (const Sample& s : run.samples) {
    if (run.arm(s.arm).config.kind == "ar") reference.emplace(s.prompt, &s);
  }
  for (const Sample& s : run.samples) {
    const auto ref = reference.find(s.prompt);
    if (ref == reference.end() || ref->second == &s) continue;
    const auto [it_a, it_b] = std::mismatch(s.tokens.begin(), s.tokens.end(),
                                            ref->second->tokens.begin(), ref->second->tokens.end());
    if (it_a == s.tokens.end() && it_b == ref->second->tokens.end()) continue;
    out.push_back({&s, ref->second, size_t(it_a - s.tokens.begin())});
  }
  return out;
}

std::vector<Violation> check_run_evidence(const RunReport& run) {
  std::vector<Violation> out;
  check_claims(run, run.speedups, /*whole_report=*/true, out);
  check_equivalence(run, {}, out);
  check_derived_values(run, out);
  check_memory_claim(run, out);
  return out;
}

std::vector<Violation> claim_violations(const RunReport& run, const Speedup& claim) {
  std::vector<Violation> out;
  check_claims(run, {claim}, /*whole_report=*/false, out);
  check_equivalence(run, {claim.subject, claim.baseline}, out);
  return out;
}

}  // namespace augur::bench::evidence
