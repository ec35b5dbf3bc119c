// The evidence gate (docs/bench-report.md): a valid report passes, and each rule catches exactly
// the defect planted for it, whatever the report's summary says.
#include "bench/evidence_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace augur::bench {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

constexpr int kGen = 64;
constexpr int kRepeats = 5;
const std::vector<std::string> kPrompts = {"p01", "p02"};

struct ArmPlan {
  std::string name, kind, config_key, drafter;
  int draft_max;
  double decode_tok_s;  // rate of repeat 0; later repeats drift a little
  int cycles, drafted, accepted;
  std::vector<int> accept_hist;  // [draft_max + 1], sums to cycles
};

const std::vector<ArmPlan>& arm_plans() {
  static const std::vector<ArmPlan> plans = {
      {"ar", "ar", "ar", "", 0, 310.0, 0, 0, 0, {}},
      {"spec:ngram:4", "spec", "spec/ngram/k4", "ngram", 4, 362.0, 40, 120, 24, {28, 6, 2, 2, 2}},
      {"spec:model:8",
       "spec",
       "spec/model/k8",
       "model",
       8,
       421.0,
       30,
       240,
       34,
       {18, 4, 3, 1, 2, 1, 0, 0, 1}}};
  return plans;
}

// What greedy decoding of a prompt yields; identical for every arm of a lossless engine.
std::vector<int> greedy_tokens(size_t prompt) {
  std::vector<int> tokens(kGen);
  for (int pos = 0; pos < kGen; ++pos) tokens[pos] = int(100 * (prompt + 1) + (pos * 37) % 251);
  return tokens;
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

json header(const std::string& kind) {
  return {{"schema", "augur.bench/1"},
          {"kind", kind},
          {"created", "2026-12-02T22:30:00Z"},
          {"machine",
           {{"cpu", "AMD EPYC 7B13"},
            {"cores", 2},
            {"threads_used", 2},
            {"memory_bytes", 25769803776},
            {"isa", "avx2"},
            {"os", "Linux 6.1"}}},
          {"build",
           {{"commit", "1f8b0b8"},
            {"dirty", false},
            {"compiler", "GNU 12.2.0"},
            {"build_type", "Release"},
            {"flags", "-O2"}}},
          {"models", json::array({{{"role", "target"},
                                   {"path", "models/zoo-target-q8_0.gguf"},
                                   {"sha256", std::string(64, 'a')},
                                   {"bytes", 123456789},
                                   {"arch", "llama"},
                                   {"tensor_types", {{"Q8_0", 56}, {"F32", 17}}}}})}};
}

// A clean "run": 2 prompts x arms ar (baseline) + spec:ngram:4 + spec:model:8 (subjects),
// 1 warm-up + 5 measured repeats each, interleaved, with a speedup claim per subject.
json valid_run_report() {
  json report = header("run");
  report["config"] = {{"prompts_file", "bench/prompts.txt"},
                      {"prompts_sha256", std::string(64, 'b')},
                      {"n_prompts", int(kPrompts.size())},
                      {"n_gen", kGen},
                      {"repeats", kRepeats},
                      {"warmup", 1},
                      {"threads", 2},
                      {"ubatch", 512},
                      {"n_ctx", 512},
                      {"sampler",
                       {{"temperature", 0},
                        {"top_k", 40},
                        {"top_p", 0.95},
                        {"min_p", 0.05},
                        {"repeat_penalty", 1}}},
                      {"seed", 1}};
  report["arms"] = json::array();
  for (const ArmPlan& plan : arm_plans()) {
    json arm = {{"name", plan.name},
                {"kind", plan.kind},
                {"role", plan.kind == "ar" ? "baseline" : "subject"},
                {"config_key", plan.config_key}};
    if (plan.kind == "spec") {
      arm["drafter"] = plan.drafter;
      arm["draft_max"] = plan.draft_max;
    }
    report["arms"].push_back(arm);
  }

  json samples = json::array();
  int order = 0;
  for (int round = -1; round < kRepeats; ++round) {  // round -1: the warm-up
    for (size_t prompt = 0; prompt < kPrompts.size(); ++prompt) {
      for (const ArmPlan& plan : arm_plans()) {
        const bool warmup = round < 0;
        const int repeat = warmup ? 0 : round;
        const double tok_s = plan.decode_tok_s * (1.0 - 0.004 * repeat) - (warmup ? 20 : 0);
        const int n_prompt = prompt == 0 ? 37 : 52;
        samples.push_back(
            {{"arm", plan.name},
             {"prompt", kPrompts[prompt]},
             {"repeat", repeat},
             {"warmup", warmup},
             {"order", order},
             {"timing_scope", "decode_only"},
             {"greedy", true},
             {"n_prompt", n_prompt},
             {"n_gen", kGen},
             {"prefill_s", 0.0012 * n_prompt * (1.0 + 0.02 * repeat)},
             {"decode_s", kGen / tok_s},
             {"decode_tok_s", tok_s},
             {"cycles", plan.cycles},
             {"drafted", plan.drafted},
             {"accepted", plan.accepted},
             {"tau", plan.cycles ? double(plan.accepted + plan.cycles) / plan.cycles : 0.0},
             {"accept_hist", plan.accept_hist},
             {"peak_rss_bytes", 51200000 + 4096 * order},  // monotone over the run
             {"tokens", greedy_tokens(prompt)}});
        ++order;
      }
    }
  }
  report["samples"] = samples;

  json summary_arms = json::array();
  std::vector<double> medians;
  for (const ArmPlan& plan : arm_plans()) {
    std::vector<double> rates;
    int64_t max_rss = 0;
    for (const json& sample : samples) {
      if (sample["arm"] != plan.name) continue;
      max_rss = std::max(max_rss, sample["peak_rss_bytes"].get<int64_t>());
      if (!sample["warmup"].get<bool>()) rates.push_back(sample["decode_tok_s"].get<double>());
    }
    std::sort(rates.begin(), rates.end());
    medians.push_back(median_of(rates));
    const double n_measured = double(rates.size());
    summary_arms.push_back(
        {{"name", plan.name},
         {"n_samples", rates.size()},
         {"decode_tokens_median", kGen},
         {"decode_tok_s",
          {{"median", medians.back()},
           {"min", rates.front()},
           {"max", rates.back()},
           {"q1", rates[2]},
           {"q3", rates[7]},
           {"iqr", rates[7] - rates[2]}}},
         {"prefill_tok_s", {{"median", 820.0}, {"min", 790.0}, {"max", 833.0}}},
         {"prefill_spread_max", 1.08},
         {"cycles", int64_t(plan.cycles * n_measured)},
         {"drafted", int64_t(plan.drafted * n_measured)},
         {"accepted", int64_t(plan.accepted * n_measured)},
         {"tau_mean", plan.cycles ? double(plan.accepted + plan.cycles) / plan.cycles : 0.0},
         {"tau_hist", plan.accept_hist},
         {"peak_rss_bytes", max_rss}});
  }
  report["summary"] = {{"arms", summary_arms},
                       {"speedups", json::array({{{"subject", "spec:ngram:4"},
                                                  {"baseline", "ar"},
                                                  {"metric", "decode_tok_s_median"},
                                                  {"value", medians[1] / medians[0]}},
                                                 {{"subject", "spec:model:8"},
                                                  {"baseline", "ar"},
                                                  {"metric", "decode_tok_s_median"},
                                                  {"value", medians[2] / medians[0]}}})},
                       {"withheld", json::array()},
                       {"equivalence", json::array()}};
  return report;
}

// Drops every speed claim and says why, as the harness does when the data does not support one.
void withhold_claims(json& report, const std::string& rule) {
  report["summary"]["speedups"] = json::array();
  report["summary"]["withheld"].push_back({{"rule", rule}, {"reason", "planted by the test"}});
}

json& sample_of(json& report, const std::string& arm, const std::string& prompt, int repeat,
                bool warmup = false) {
  for (json& sample : report["samples"]) {
    if (sample["arm"] == arm && sample["prompt"] == prompt && sample["repeat"] == repeat &&
        sample["warmup"] == warmup) {
      return sample;
    }
  }
  throw std::runtime_error("test bug: no such sample");
}

void for_samples(json& report, const std::function<bool(const json&)>& select,
                 const std::function<void(json&)>& change) {
  for (json& sample : report["samples"]) {
    if (select(sample)) change(sample);
  }
}

std::set<std::string> rules_of(const std::vector<Violation>& violations) {
  std::set<std::string> rules;
  for (const Violation& violation : violations) rules.insert(violation.rule);
  return rules;
}

// The report trips `rule` and nothing else; returns the printed violations for message checks.
std::string expect_only_rule(const json& report, const std::string& rule) {
  const auto violations = check_report(report);
  const std::string text = format_violations(violations);
  EXPECT_THAT(rules_of(violations), ElementsAre(rule)) << text;
  return text;
}

void expect_clean(const json& report) {
  const auto violations = check_report(report);
  EXPECT_THAT(violations, IsEmpty()) << format_violations(violations);
}

json valid_verify_curve_report() {
  json report = header("verify-curve");
  report["config"] = {{"max_m", 4}, {"contexts", {256, 1024}}, {"repeats", 9}, {"threads", 2}};
  report["curve"] = json::array();
  for (int ctx : {256, 1024}) {
    const double m1_s = ctx == 256 ? 0.0021 : 0.0034;
    for (int m = 1; m <= 4; ++m) {
      const double median_s = m1_s * (1.0 + 0.06 * (m - 1));
      report["curve"].push_back({{"ctx", ctx},
                                 {"m", m},
                                 {"median_s", median_s},
                                 {"min_s", median_s * 0.97},
                                 {"max_s", median_s * 1.05},
                                 {"q1_s", median_s * 0.99},
                                 {"q3_s", median_s * 1.01},
                                 {"ratio_to_m1", median_s / m1_s}});
    }
  }
  report["drafters"] = json::array({{{"name", "model"}, {"per_token_s", 0.0004}},
                                    {{"name", "layerskip:4"}, {"per_token_s", 0.0009}}});
  return report;
}

// ---- the clean reports ----

TEST(EvidenceGate, ValidRunReportIsClean) {
  expect_clean(valid_run_report());
}

TEST(EvidenceGate, ValidVerifyCurveReportIsClean) {
  expect_clean(valid_verify_curve_report());
}

TEST(EvidenceGate, WarmUpsNumberedBelowZeroPass) {
  // bench_run numbers warm-up rounds from -warmup; the doc leaves the numbering open.
  json report = valid_run_report();
  for_samples(
      report, [](const json& s) { return s["warmup"].get<bool>(); },
      [](json& s) { s["repeat"] = -1; });
  expect_clean(report);
}

TEST(EvidenceGate, VerifyCurveDrafterThatProposedNothingNeedsNoTiming) {
  json report = valid_verify_curve_report();
  report["drafters"].push_back({{"name", "ngram"}, {"proposed", false}});
  expect_clean(report);
  report["drafters"].back()["proposed"] = true;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("drafters[2]: missing 'per_token_s'"));
}

TEST(EvidenceGate, FormatViolationsPrintsRuleColonMessagePerLine) {
  EXPECT_EQ(format_violations({}), "");
  EXPECT_EQ(format_violations({{"SAMPLES", "arm 'ar' is short"}, {"SCHEMA", "report: x"}}),
            "SAMPLES: arm 'ar' is short\nSCHEMA: report: x\n");
}

// ---- one planted defect per rule ----

TEST(EvidenceGate, SpecArmWithNoDraftedTokensInMeasuredSamplesNeverRan) {
  json report = valid_run_report();
  // The warm-up still drafts: only measured samples are evidence.
  for_samples(
      report, [](const json& s) { return s["arm"] == "spec:ngram:4" && !s["warmup"].get<bool>(); },
      [](json& s) { s["drafted"] = 0; });
  const auto text = expect_only_rule(report, "SPEC_NEVER_RAN");
  EXPECT_THAT(text, HasSubstr("'spec:ngram:4'"));
  EXPECT_THAT(text, HasSubstr("0 drafted"));
  EXPECT_THAT(text, Not(HasSubstr("spec:model:8")));
}

TEST(EvidenceGate, SpecArmWithNoCyclesNeverRan) {
  json report = valid_run_report();
  for_samples(
      report, [](const json& s) { return s["arm"] == "spec:model:8"; },
      [](json& s) { s["cycles"] = 0; });
  EXPECT_THAT(expect_only_rule(report, "SPEC_NEVER_RAN"), HasSubstr("'spec:model:8'"));
}

TEST(EvidenceGate, ArArmWithSubjectRoleIsBaselineAsSubject) {
  json report = valid_run_report();
  report["arms"][0]["role"] = "subject";
  const auto text = expect_only_rule(report, "BASELINE_AS_SUBJECT");
  EXPECT_THAT(text, HasSubstr("ar arm 'ar' has role 'subject'"));
}

TEST(EvidenceGate, SpeedupWithArSubjectIsBaselineAsSubject) {
  json report = valid_run_report();
  report["summary"]["speedups"].push_back(
      {{"subject", "ar"},
       {"baseline", "spec:ngram:4"},
       {"metric", "decode_tok_s_median"},
       {"value", 1.0 / report["summary"]["speedups"][0]["value"].get<double>()}});
  const auto text = expect_only_rule(report, "BASELINE_AS_SUBJECT");
  EXPECT_THAT(text, HasSubstr("speedups[2]"));
  EXPECT_THAT(text, HasSubstr("ar arm 'ar' over 'spec:ngram:4'"));
}

TEST(EvidenceGate, InflatedSpeedupValueTripsSpeedupValue) {
  json report = valid_run_report();
  report["summary"]["speedups"][1]["value"] = 5.0;
  const auto text = expect_only_rule(report, "SPEEDUP_VALUE");
  EXPECT_THAT(text, HasSubstr("claims 5x for 'spec:model:8' over 'ar'"));
}

TEST(EvidenceGate, SummaryMedianNotFromTheSamplesTripsSpeedupValue) {
  json report = valid_run_report();
  report["summary"]["arms"][0]["decode_tok_s"]["median"] = 1.0;
  const auto text = expect_only_rule(report, "SPEEDUP_VALUE");
  EXPECT_THAT(text, HasSubstr("arm 'ar'"));
}

TEST(EvidenceGate, SpeedupOfAnArmOverItselfIsSelfComparison) {
  json report = valid_run_report();
  report["summary"]["speedups"][1]["baseline"] = "spec:model:8";
  report["summary"]["speedups"][1]["value"] = 1.0;
  const auto text = expect_only_rule(report, "SELF_COMPARISON");
  EXPECT_THAT(text, HasSubstr("compares arm 'spec:model:8' with itself"));
}

TEST(EvidenceGate, SpeedupBetweenArmsWithEqualConfigKeyIsSelfComparison) {
  json report = valid_run_report();
  report["arms"][1]["config_key"] = "ar";
  const auto text = expect_only_rule(report, "SELF_COMPARISON");
  EXPECT_THAT(text, HasSubstr("'spec:ngram:4' with 'ar'"));
  EXPECT_THAT(text, HasSubstr("config_key 'ar'"));
}

TEST(EvidenceGate, EqualConfigKeysOfArmsNotComparedWithEachOtherPass) {
  // The rule is about a speedup between the two; both spec arms are still compared with AR.
  json report = valid_run_report();
  report["arms"][2]["config_key"] = report["arms"][1]["config_key"];
  expect_clean(report);
}

TEST(EvidenceGate, FourMeasuredRepeatsForOnePromptTripSamples) {
  json report = valid_run_report();
  auto& samples = report["samples"];
  samples.erase(
      std::find(samples.begin(), samples.end(), sample_of(report, "spec:model:8", "p02", 0)));
  const auto text = expect_only_rule(report, "SAMPLES");
  EXPECT_THAT(text, HasSubstr("arm 'spec:model:8'"));
  EXPECT_THAT(text, HasSubstr("'p02' (4)"));
}

TEST(EvidenceGate, WarmUpSamplesDoNotCountAsMeasuredRepeats) {
  json report = valid_run_report();
  json& sample = sample_of(report, "ar", "p01", 0);
  sample["warmup"] = true;
  sample["repeat"] = 1;  // a second warm-up, not a duplicate of the first
  const auto text = expect_only_rule(report, "SAMPLES");
  EXPECT_THAT(text, HasSubstr("arm 'ar'"));
  EXPECT_THAT(text, HasSubstr("'p01' (4)"));
}

TEST(EvidenceGate, ArmMissingAPromptTripsSamples) {
  json report = valid_run_report();
  auto& samples = report["samples"];
  samples.erase(std::remove_if(samples.begin(), samples.end(),
                               [](const json& s) {
                                 return s["arm"] == "spec:ngram:4" && s["prompt"] == "p02" &&
                                        !s["warmup"].get<bool>();
                               }),
                samples.end());
  report["summary"]["arms"][1]["peak_rss_bytes"] = [&] {  // keep the memory figure honest
    int64_t max_rss = 0;
    for (const json& s : samples) {
      if (s["arm"] == "spec:ngram:4")
        max_rss = std::max(max_rss, s["peak_rss_bytes"].get<int64_t>());
    }
    return max_rss;
  }();
  EXPECT_THAT(expect_only_rule(report, "SAMPLES"), HasSubstr("'p02' (0)"));
}

TEST(EvidenceGate, MedianOfSixteenDecodedTokensTripsDecodeTokens) {
  json report = valid_run_report();
  for_samples(
      report, [](const json&) { return true; },
      [](json& s) {
        s["n_gen"] = 16;
        s["tokens"].erase(s["tokens"].begin() + 16, s["tokens"].end());
      });
  const auto violations = check_report(report);
  EXPECT_THAT(rules_of(violations), ElementsAre("DECODE_TOKENS")) << format_violations(violations);
  EXPECT_THAT(violations, SizeIs(3));  // one per compared arm
  EXPECT_THAT(format_violations(violations), HasSubstr("median of 16 tokens"));
}

TEST(EvidenceGate, EndToEndMetricTripsDecodeOnlyMissing) {
  json report = valid_run_report();
  report["summary"]["speedups"][0]["metric"] = "end_to_end_tok_s";
  const auto text = expect_only_rule(report, "DECODE_ONLY_MISSING");
  EXPECT_THAT(text, HasSubstr("'end_to_end_tok_s'"));
  EXPECT_THAT(text, HasSubstr("speedups[0]"));
}

TEST(EvidenceGate, ComparedArmWithoutDecodeMedianTripsDecodeOnlyMissing) {
  json report = valid_run_report();
  report["summary"]["arms"][0]["decode_tok_s"].erase("median");
  const auto text = expect_only_rule(report, "DECODE_ONLY_MISSING");
  EXPECT_THAT(text, HasSubstr("arm 'ar'"));
  EXPECT_THAT(text, HasSubstr("decode_tok_s.median"));
}

TEST(EvidenceGate, EndToEndTimedSampleTripsScopeMismatch) {
  json report = valid_run_report();
  sample_of(report, "spec:ngram:4", "p01", 2)["timing_scope"] = "end_to_end";
  const auto text = expect_only_rule(report, "SCOPE_MISMATCH");
  EXPECT_THAT(text, HasSubstr("arm 'spec:ngram:4'"));
  EXPECT_THAT(text, HasSubstr("end_to_end"));
  EXPECT_THAT(text, HasSubstr("prompt 'p01' repeat 2"));
}

TEST(EvidenceGate, NoisyPrefillWithASpeedupTripsPrefillVariance) {
  json report = valid_run_report();  // its summary's prefill_spread_max still says 1.08
  sample_of(report, "ar", "p01", 0)["prefill_s"] = 0.01;
  sample_of(report, "ar", "p01", 1)["prefill_s"] = 0.05;
  const auto text = expect_only_rule(report, "PREFILL_VARIANCE");
  EXPECT_THAT(text, HasSubstr("arm 'ar'"));
  EXPECT_THAT(text, HasSubstr("prompt 'p01' ranges 0.01 .. 0.05"));
}

TEST(EvidenceGate, NoisyPrefillInAWarmUpIsNotEvidence) {
  json report = valid_run_report();
  sample_of(report, "ar", "p01", 0, /*warmup=*/true)["prefill_s"] = 0.5;
  expect_clean(report);
}

TEST(EvidenceGate, ChangedTokenInGreedySpecSampleTripsEquivalenceWhateverTheSummarySays) {
  json report = valid_run_report();
  ASSERT_THAT(report["summary"]["equivalence"], IsEmpty());
  sample_of(report, "spec:model:8", "p02", 3)["tokens"][17] = 99999;
  const auto violations = check_report(report);
  EXPECT_THAT(rules_of(violations), ElementsAre("EQUIVALENCE")) << format_violations(violations);
  EXPECT_THAT(violations, SizeIs(1));
  const auto text = format_violations(violations);
  EXPECT_THAT(text, HasSubstr("arm 'spec:model:8' prompt 'p02': 1 of 6 greedy samples"));
  EXPECT_THAT(text, HasSubstr("at token 17 (99999 vs"));
}

TEST(EvidenceGate, EveryDifferingSampleOfOnePromptGivesOneEquivalenceLine) {
  json report = valid_run_report();
  for_samples(
      report, [](const json& s) { return s["arm"] == "spec:ngram:4" && s["prompt"] == "p01"; },
      [](json& s) { s["tokens"].back() = 7; });
  const auto violations = check_report(report);
  EXPECT_THAT(violations, SizeIs(1)) << format_violations(violations);
  EXPECT_THAT(format_violations(violations), HasSubstr("6 of 6 greedy samples"));
}

TEST(EvidenceGate, NondeterministicGreedyArTripsEquivalence) {
  json report = valid_run_report();
  sample_of(report, "ar", "p01", 2)["tokens"][5] = 4242;
  const auto text = expect_only_rule(report, "EQUIVALENCE");
  EXPECT_THAT(text, HasSubstr("arm 'ar' prompt 'p01'"));
  EXPECT_THAT(text, HasSubstr("not deterministic"));
}

TEST(EvidenceGate, NonGreedySpecSamplesAreNotComparedWithAr) {
  json report = valid_run_report();
  for_samples(
      report, [](const json& s) { return s["arm"] == "spec:ngram:4"; },
      [](json& s) { s["greedy"] = false; });
  sample_of(report, "spec:ngram:4", "p01", 1)["tokens"][3] = 99999;
  expect_clean(report);
}

TEST(EvidenceGate, SummaryPeakRssAboveEverySampleTripsMemoryClaim) {
  json report = valid_run_report();
  const int64_t claimed = report["summary"]["arms"][1]["peak_rss_bytes"].get<int64_t>() + 1000000;
  report["summary"]["arms"][1]["peak_rss_bytes"] = claimed;
  const auto text = expect_only_rule(report, "MEMORY_CLAIM");
  EXPECT_THAT(text, HasSubstr("arm 'spec:ngram:4'"));
  EXPECT_THAT(text, HasSubstr(std::to_string(claimed)));
  EXPECT_THAT(text, HasSubstr(std::to_string(claimed - 1000000)));
}

TEST(EvidenceGate, SampleWithZeroPeakRssTripsMemoryClaim) {
  json report = valid_run_report();
  sample_of(report, "spec:model:8", "p01", 1)["peak_rss_bytes"] = 0;
  const auto text = expect_only_rule(report, "MEMORY_CLAIM");
  EXPECT_THAT(text, HasSubstr("arm 'spec:model:8': 1 of 12 samples have no positive"));
}

TEST(EvidenceGate, SampleWithoutPeakRssTripsMemoryClaim) {
  json report = valid_run_report();
  sample_of(report, "ar", "p02", 0, /*warmup=*/true).erase("peak_rss_bytes");
  EXPECT_THAT(expect_only_rule(report, "MEMORY_CLAIM"), HasSubstr("(missing)"));
}

// ---- claims withheld: the claim-dependent rules stay quiet ----

TEST(EvidenceGate, ClaimDependentDefectsPassWhenEveryClaimIsWithheld) {
  {
    json report = valid_run_report();
    sample_of(report, "ar", "p01", 0)["prefill_s"] = 0.01;
    sample_of(report, "ar", "p01", 1)["prefill_s"] = 0.05;
    withhold_claims(report, "PREFILL_VARIANCE");
    expect_clean(report);
  }
  {
    json report = valid_run_report();
    auto& samples = report["samples"];
    samples.erase(
        std::find(samples.begin(), samples.end(), sample_of(report, "spec:model:8", "p02", 0)));
    withhold_claims(report, "SAMPLES");
    expect_clean(report);
  }
  {
    json report = valid_run_report();
    for_samples(
        report, [](const json&) { return true; },
        [](json& s) {
          s["n_gen"] = 16;
          s["tokens"].erase(s["tokens"].begin() + 16, s["tokens"].end());
        });
    withhold_claims(report, "DECODE_TOKENS");
    expect_clean(report);
  }
  {
    json report = valid_run_report();
    sample_of(report, "spec:ngram:4", "p01", 2)["timing_scope"] = "end_to_end";
    report["summary"]["arms"][0]["decode_tok_s"].erase("median");
    withhold_claims(report, "SCOPE_MISMATCH");
    expect_clean(report);
  }
}

// ---- structure ----

TEST(EvidenceGate, ReportThatIsNotAnObjectIsSchema) {
  for (const json& report : {json::array({1, 2}), json(), json("augur.bench/1"), json(3.5)}) {
    const auto violations = check_report(report);
    EXPECT_THAT(violations, SizeIs(1)) << report.dump();
    EXPECT_THAT(rules_of(violations), ElementsAre("SCHEMA"));
  }
}

TEST(EvidenceGate, WrongSchemaStringIsSchema) {
  json report = valid_run_report();
  report["schema"] = "augur.bench/2";
  const auto text = expect_only_rule(report, "SCHEMA");
  EXPECT_THAT(text, HasSubstr("'augur.bench/2'"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

TEST(EvidenceGate, UnknownKindIsSchema) {
  json report = valid_run_report();
  report["kind"] = "profile";
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("kind 'profile'"));
}

TEST(EvidenceGate, MissingSamplesIsSchema) {
  json report = valid_run_report();
  report.erase("samples");
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("missing 'samples'"));
}

TEST(EvidenceGate, MistypedSampleFieldIsSchemaAndHidesTheEvidenceRules) {
  json report = valid_run_report();
  sample_of(report, "ar", "p01", 3)["n_gen"] = "64";
  report["summary"]["speedups"][0]["metric"] = "end_to_end_tok_s";  // not reported yet
  const auto text = expect_only_rule(report, "SCHEMA");
  EXPECT_THAT(text, HasSubstr("'n_gen' is string \"64\", expected an integer"));
}

TEST(EvidenceGate, SpeedupNamingAnUndeclaredArmIsSchema) {
  json report = valid_run_report();
  report["summary"]["speedups"][0]["subject"] = "spec:eagle:6";
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("'spec:eagle:6'"));
}

TEST(EvidenceGate, TokensDisagreeingWithNGenIsSchema) {
  json report = valid_run_report();
  sample_of(report, "spec:ngram:4", "p02", 4)["tokens"].erase(0);
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("n_gen is 64 but 'tokens' holds 63"));
}

TEST(EvidenceGate, MalformedReportsNeverThrow) {
  const std::vector<std::function<void(json&)>> breakages = {
      [](json& r) { r["arms"] = "ar"; },
      [](json& r) {
        r["arms"] = json::array({1, nullptr});
      },
      [](json& r) {
        r["samples"] = json::array({nullptr, "x", json::array()});
      },
      [](json& r) { r["summary"] = json::array(); },
      [](json& r) { r["summary"]["arms"] = json::object(); },
      [](json& r) {
        r["samples"][0]["tokens"] = json::array({-1, "a", 2.5});
      },
      [](json& r) { r["samples"][0]["n_gen"] = std::numeric_limits<uint64_t>::max(); },
      [](json& r) { r["samples"][0]["n_gen"] = 64.5; },
      [](json& r) { r["samples"][0]["prefill_s"] = std::nan(""); },
      [](json& r) { r["samples"][0]["decode_s"] = -1.0; },
      [](json& r) { r["samples"][0]["peak_rss_bytes"] = "big"; },
      [](json& r) { r["summary"]["arms"][0]["decode_tok_s"] = 3; },
      [](json& r) { r["machine"] = nullptr; },
      [](json& r) { r["schema"] = 1; },
      [](json& r) { r.erase("kind"); },
  };
  for (size_t pos = 0; pos < breakages.size(); ++pos) {
    json report = valid_run_report();
    breakages[pos](report);
    std::vector<Violation> violations;
    EXPECT_NO_THROW(violations = check_report(report)) << "breakage " << pos;
    EXPECT_THAT(rules_of(violations), ElementsAre("SCHEMA")) << "breakage " << pos << "\n"
                                                             << format_violations(violations);
  }
}

TEST(EvidenceGate, RepeatedSchemaDefectsAreFoldedAfterTwentyLines) {
  json report = valid_run_report();
  for_samples(
      report, [](const json&) { return true; }, [](json& s) { s.erase("tokens"); });
  const auto violations = check_report(report);
  ASSERT_THAT(violations, SizeIs(21));
  EXPECT_EQ(violations.back().message, "16 more structural defects not listed");
}

TEST(EvidenceGate, MalformedVerifyCurveReportIsSchema) {
  json report = valid_verify_curve_report();
  report["curve"][2]["median_s"] = 0;
  report["curve"][5].erase("ratio_to_m1");
  const auto violations = check_report(report);
  EXPECT_THAT(rules_of(violations), ElementsAre("SCHEMA"));
  const auto text = format_violations(violations);
  EXPECT_THAT(text, HasSubstr("curve[2]: 'median_s' is number 0, expected a number > 0"));
  EXPECT_THAT(text, HasSubstr("curve[5]: missing 'ratio_to_m1'"));
}

TEST(EvidenceGate, VerifyCurveMemoryFiguresMustBeMeasured) {
  json report = valid_verify_curve_report();
  for (json& point : report["curve"]) point["peak_rss_bytes"] = 61000000;
  report["peak_rss_bytes"] = 61000000;
  expect_clean(report);

  report["curve"][3]["peak_rss_bytes"] = 0;
  report["peak_rss_bytes"] = 90000000;
  const auto violations = check_report(report);
  EXPECT_THAT(rules_of(violations), ElementsAre("MEMORY_CLAIM"));
  EXPECT_THAT(violations, SizeIs(2)) << format_violations(violations);
}

// ---- roofline reports: the prefill figures (with config.prefill_tokens > 0) ----

constexpr int64_t kPrefillTokens = 512;
constexpr int64_t kPrefillFlops = 30'720'000'000;  // 60 MFLOP per token
const std::vector<double> kPrefillTokS = {101.0, 98.5, 103.2, 99.9, 100.4};
const std::vector<double> kPeakGflopS = {90.1, 91.5, 89.7, 90.8, 91.0, 90.3, 90.6};

// Writes a roofline point's prefill fields from its samples, as the harness does.
void set_prefill(json& point, const std::vector<double>& tok_s, const std::vector<double>& peak,
                 int64_t prefill_flops) {
  const double tok_s_median = median_of(tok_s), peak_median = median_of(peak);
  const double gflop_s = double(prefill_flops) / double(kPrefillTokens) * tok_s_median / 1e9;
  const auto [lo, hi] = std::minmax_element(tok_s.begin(), tok_s.end());
  point["prefill_tok_s_median"] = tok_s_median;
  point["prefill_tok_s"] = {
      {"median", tok_s_median}, {"min", *lo}, {"max", *hi}, {"q1", *lo}, {"q3", *hi},
      {"iqr", *hi - *lo}};
  point["samples_prefill_tok_s"] = tok_s;
  point["prefill_gflop_s"] = gflop_s;
  point["peak_gflop_s"] = peak_median;
  point["samples_peak_gflop_s"] = peak;
  point["prefill_peak_fraction"] = gflop_s / peak_median;
}

// A clean roofline at 1 and 2 threads, dram regime, with prefill figures on both points.
json valid_roofline_report() {
  json report = header("roofline");
  report["config"] = {{"threads", {1, 2}},
                      {"ctx", 256},
                      {"n_gen", 64},
                      {"prompt_tokens", 224},
                      {"repeats", 5},
                      {"warmup", 1},
                      {"ubatch", 512},
                      {"bandwidth_buffer_bytes", 536870912},
                      {"bandwidth_repeats", 7},
                      {"l3_bytes", 0},
                      {"prefill_tokens", kPrefillTokens},
                      {"peak_repeats", 7},
                      {"peak_fmas_per_thread", 2147483648},
                      {"seed", 1}};
  const int64_t weight_bytes = 29002272, kv_bytes = 4194304;
  report["regime"] = "dram";
  report["weight_bytes"] = weight_bytes;
  report["kv_bytes"] = kv_bytes;
  report["bytes_per_step"] = weight_bytes + kv_bytes;
  report["prefill_flops"] = kPrefillFlops;
  report["bandwidth"] = json::array();
  report["points"] = json::array();
  for (int threads : {1, 2}) {
    const double gb_s = threads == 1 ? 17.7 : 29.7;
    report["bandwidth"].push_back({{"threads", threads},
                                   {"regime", "dram"},
                                   {"buffer_bytes", 536870912},
                                   {"gb_s_median", gb_s},
                                   {"gb_s_min", gb_s - 0.5},
                                   {"gb_s_max", gb_s + 0.3},
                                   {"samples_gb_s", {gb_s - 0.5, gb_s, gb_s + 0.3}}});
    const double roofline = gb_s * 1e9 / double(weight_bytes + kv_bytes);
    const double decode = threads == 1 ? 234.0 : 310.0;
    json point = {{"threads", threads},
                  {"regime", "dram"},
                  {"roofline_tok_s", roofline},
                  {"decode_tok_s_median", decode},
                  {"fraction", decode / roofline}};
    std::vector<double> tok_s = kPrefillTokS, peak = kPeakGflopS;
    for (double& v : tok_s) v *= threads;
    for (double& v : peak) v *= threads;
    set_prefill(point, tok_s, peak, kPrefillFlops);
    report["points"].push_back(point);
  }
  return report;
}

json& roofline_point(json& report) {
  return report["points"][1];
}

TEST(EvidenceGate, ValidRooflineReportWithPrefillIsClean) {
  expect_clean(valid_roofline_report());
}

TEST(EvidenceGate, RooflineWithoutPrefillTokensInConfigNeedsNoPrefillFields) {
  // Reports written before prefill was measured: no config.prefill_tokens means prefill was off.
  json report = valid_roofline_report();
  report["config"].erase("prefill_tokens");
  report.erase("prefill_flops");
  for (json& point : report["points"]) {
    for (const char* key :
         {"prefill_tok_s_median", "prefill_tok_s", "samples_prefill_tok_s", "prefill_gflop_s",
          "peak_gflop_s", "samples_peak_gflop_s", "prefill_peak_fraction"}) {
      point.erase(key);
    }
  }
  expect_clean(report);
  report["config"]["prefill_tokens"] = 0;  // switched off explicitly
  expect_clean(report);
}

TEST(EvidenceGate, RooflineWithPrefillOnButNoPrefillFieldsIsSchema) {
  json report = valid_roofline_report();
  report.erase("prefill_flops");
  roofline_point(report).erase("prefill_peak_fraction");
  roofline_point(report).erase("samples_peak_gflop_s");
  const auto text = expect_only_rule(report, "SCHEMA");
  EXPECT_THAT(text, HasSubstr("report: missing 'prefill_flops'"));
  EXPECT_THAT(text, HasSubstr("points[1]: missing 'prefill_peak_fraction'"));
  EXPECT_THAT(text, HasSubstr("points[1]: missing 'samples_peak_gflop_s'"));
}

TEST(EvidenceGate, RooflineNonPositivePrefillFiguresAreSchema) {
  json report = valid_roofline_report();
  roofline_point(report)["samples_prefill_tok_s"][2] = 0;
  roofline_point(report)["peak_gflop_s"] = -1.0;
  const auto text = expect_only_rule(report, "SCHEMA");
  EXPECT_THAT(text, HasSubstr("points[1]: 'samples_prefill_tok_s'[2] is number 0"));
  EXPECT_THAT(text, HasSubstr("points[1]: 'peak_gflop_s' is number -1"));
}

TEST(EvidenceGate, PrefillMedianNotFromItsSamplesIsSchema) {
  json report = valid_roofline_report();
  json& point = roofline_point(report);
  point["samples_prefill_tok_s"][4] = 400.0;  // was the median (200.8); now 202.0 is
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("points[1]: prefill_tok_s_median 200.8 is not the median of "
                        "samples_prefill_tok_s = 202"));
}

TEST(EvidenceGate, PrefillMedianOfAnEvenSampleCountIsTheMeanOfTheMiddleTwo) {
  json report = valid_roofline_report();
  set_prefill(roofline_point(report), {101.0, 98.0, 103.0, 99.0}, kPeakGflopS, kPrefillFlops);
  ASSERT_DOUBLE_EQ(roofline_point(report)["prefill_tok_s_median"].get<double>(), 100.0);
  expect_clean(report);
}

TEST(EvidenceGate, PrefillMedianDisagreeingWithItsSpreadIsSchema) {
  json report = valid_roofline_report();
  roofline_point(report)["prefill_tok_s"]["median"] = 210.0;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("points[1]: prefill_tok_s_median 200.8 is not prefill_tok_s.median = 210"));
}

TEST(EvidenceGate, PrefillSpreadMedianWithinRoundingPasses) {
  json report = valid_roofline_report();
  json& median = roofline_point(report)["prefill_tok_s"]["median"];
  median = median.get<double>() * (1 + 1e-9);  // written through another float path
  expect_clean(report);
}

TEST(EvidenceGate, PeakGflopsNotTheMedianOfItsSamplesIsSchema) {
  json report = valid_roofline_report();
  roofline_point(report)["samples_peak_gflop_s"][6] = 10.0;  // was the median; now 180.6 is
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("points[1]: peak_gflop_s 181.2 is not the median of "
                        "samples_peak_gflop_s = 180.6"));
}

TEST(EvidenceGate, PeakGflopsSamplesInAnyOrderPass) {
  json report = valid_roofline_report();
  json& samples = roofline_point(report)["samples_peak_gflop_s"];
  std::reverse(samples.begin(), samples.end());
  expect_clean(report);
}

TEST(EvidenceGate, PrefillGflopsNotFromTheFlopsAndTokensPerSecondIsSchema) {
  json report = valid_roofline_report();
  report["prefill_flops"] = 2 * kPrefillFlops;  // the points still use the old count
  const auto text = expect_only_rule(report, "SCHEMA");
  for (const char* point : {"points[0]", "points[1]"}) {
    EXPECT_THAT(text, HasSubstr(std::string(point) + ": prefill_gflop_s")) << point;
  }
  EXPECT_THAT(text,
              HasSubstr("is not prefill_flops / prefill_tokens x prefill_tok_s_median / 1e9"));
}

TEST(EvidenceGate, PrefillGflopsRecomputedForAnotherFlopCountPasses) {
  json report = valid_roofline_report();
  const int64_t flops = 3 * kPrefillFlops;
  report["prefill_flops"] = flops;
  for (json& point : report["points"]) {
    set_prefill(point, point["samples_prefill_tok_s"].get<std::vector<double>>(),
                point["samples_peak_gflop_s"].get<std::vector<double>>(), flops);
  }
  expect_clean(report);
}

TEST(EvidenceGate, PrefillPeakFractionNotGflopsOverPeakIsSchema) {
  json report = valid_roofline_report();
  json& point = roofline_point(report);
  point["prefill_peak_fraction"] = 2 * point["prefill_peak_fraction"].get<double>();
  const auto text = expect_only_rule(report, "SCHEMA");
  EXPECT_THAT(text, HasSubstr("points[1]: prefill_peak_fraction"));
  EXPECT_THAT(text, HasSubstr("is not prefill_gflop_s / peak_gflop_s"));
}

TEST(EvidenceGate, PrefillAbovePeakIsReportedAsIs) {
  // A fraction over 1 means the peak was measured badly (a loaded machine), not a broken report.
  json report = valid_roofline_report();
  set_prefill(roofline_point(report), {5000.0, 5100.0, 5200.0}, {100.0, 101.0, 102.0},
              kPrefillFlops);
  ASSERT_GT(roofline_point(report)["prefill_peak_fraction"].get<double>(), 1.0);
  expect_clean(report);
}

}  // namespace
}  // namespace augur::bench
