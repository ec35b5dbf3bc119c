// The evidence gate on "run" reports (docs/bench-report.md): a valid report passes, each rule
// catches the defect planted for it, and the bypasses a review found (an arm cloned under a new
// key, a flag that hides a greedy mismatch, a claim over samples that mostly never drafted, ...)
// are rejected from the data, whatever the report's labels, flags and summary say.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bench/evidence_gate.h"
#include "support/bench_reports.h"
#include "support/gate_assertions.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::resummarize;
using testing::sample_of;
using ::testing::SizeIs;
using testing::valid_run_report;

void for_samples(json& report, const std::function<bool(const json&)>& select,
                 const std::function<void(json&)>& change) {
  for (json& sample : report["samples"]) {
    if (select(sample)) change(sample);
  }
}

bool is_arm(const json& sample, const std::string& arm) {
  return sample["arm"] == arm;
}

// Sets a sample's decode time and what follows from it (the rate; its inner timings scaled).
void set_decode_s(json& sample, double decode_s) {
  const double scale = decode_s / sample["decode_s"].get<double>();
  sample["decode_s"] = decode_s;
  sample["decode_tok_s"] = double(sample["n_gen"].get<int>() - 1) / decode_s;
  sample["draft_s"] = sample["draft_s"].get<double>() * scale;
  sample["verify_s"] = sample["verify_s"].get<double>() * scale;
}

json claim(const std::string& subject, const std::string& baseline, double value) {
  return {{"subject", subject},
          {"baseline", baseline},
          {"metric", "decode_tok_s_median"},
          {"value", value}};
}

double measured_median(const json& report, const std::string& arm) {
  std::vector<double> rates;
  for (const json& s : report["samples"]) {
    if (s["arm"] == arm && !s["warmup"].get<bool>())
      rates.push_back(s["decode_tok_s"].get<double>());
  }
  return median(rates);
}

// Adds an arm `name` whose samples are copies of `source`'s, changed by `change`, and a claim of
// `source` over the copy with the value its samples give: the clone attack.
void add_clone(json& report, const std::string& source, const std::string& name,
               const std::function<void(json& arm)>& change_arm,
               const std::function<void(json& sample)>& change_sample) {
  json arm;
  for (const json& a : report["arms"]) {
    if (a["name"] == source) arm = a;
  }
  arm["name"] = name;
  arm["config_key"] = "spec/clone/" + name;
  change_arm(arm);
  report["arms"].push_back(arm);
  const size_t n_arms = report["arms"].size();
  json copies = json::array();
  for (const json& s : report["samples"]) {
    if (s["arm"] != source) continue;
    json copy = s;
    copy["arm"] = name;
    copy["order"] = n_arms - 1;  // every (prompt, round) gets the new slot
    change_sample(copy);
    copies.push_back(copy);
  }
  for (json& copy : copies) report["samples"].push_back(copy);
  resummarize(report);
  report["summary"]["speedups"].push_back(
      claim(source, name, measured_median(report, source) / measured_median(report, name)));
}

// ---- clean reports and the harness's own summary ----

TEST(EvidenceGateRun, ValidRunReportIsClean) {
  const json report = valid_run_report();
  expect_clean(report);
  // summarize_run claims both subjects: the data supports them.
  ASSERT_THAT(report["summary"]["speedups"], SizeIs(2));
  EXPECT_THAT(report["summary"]["withheld"], IsEmpty());
  EXPECT_NEAR(report["summary"]["speedups"][0]["value"].get<double>(),
              measured_median(report, "spec:ngram:4") / measured_median(report, "ar"), 1e-12);
}

TEST(EvidenceGateRun, SummarizeRunWithholdsWhatTheGateWouldReject) {
  json report = valid_run_report();
  sample_of(report, "spec:model:8", "p02", 3)["tokens"][5] = 9999;
  resummarize(report);
  const json& summary = report["summary"];
  ASSERT_THAT(summary["speedups"], SizeIs(1));
  EXPECT_EQ(summary["speedups"][0]["subject"], "spec:ngram:4");
  ASSERT_THAT(summary["withheld"], SizeIs(1));
  EXPECT_EQ(summary["withheld"][0]["rule"], "EQUIVALENCE");
  ASSERT_THAT(summary["equivalence"], SizeIs(1));
  EXPECT_EQ(summary["equivalence"][0]["first_mismatch"], 5);
  // The claim-free report still fails on the mismatch itself.
  EXPECT_THAT(expect_only_rule(report, "EQUIVALENCE"), HasSubstr("'spec:model:8' prompt 'p02'"));
}

TEST(EvidenceGateRun, FormatViolationsPrintsRuleColonMessagePerLine) {
  EXPECT_EQ(format_violations({}), "");
  EXPECT_EQ(format_violations({{"SAMPLES", "arm 'ar' is short"}, {"SCHEMA", "report: x"}}),
            "SAMPLES: arm 'ar' is short\nSCHEMA: report: x\n");
}

// ---- bypass 1: identity of arms from configuration and data, never from config_key ----

TEST(EvidenceGateRun, CloneUnderANewKeyIsSelfComparison) {
  json report = valid_run_report();
  add_clone(
      report, "spec:model:8", "spec:model:8b", [](json&) {},
      [](json& s) { set_decode_s(s, s["decode_s"].get<double>() * 1.25); });
  EXPECT_THAT(expect_only_rule(report, "SELF_COMPARISON"), HasSubstr("the same configuration"));
}

TEST(EvidenceGateRun, CloneWithAnotherDeclaredConfigurationIsSelfComparisonByBehaviour) {
  json report = valid_run_report();
  int n = 0;
  add_clone(
      report, "spec:model:8", "spec:model:9", [](json& arm) { arm["draft_max"] = 9; },
      [&](json& s) {
        s["accept_hist"].push_back(0);
        // Noise, so no timing is an exact copy or rescale.
        set_decode_s(s, s["decode_s"].get<double>() * (1.25 + 0.001 * (n++ % 7)));
        s["prefill_s"] = s["prefill_s"].get<double>() * (1.01 + 0.002 * (n % 5));
        s["prefill_tok_s"] = s["n_prompt"].get<double>() / s["prefill_s"].get<double>();
        s["peak_rss_bytes"] = s["peak_rss_bytes"].get<int64_t>() + 8192;
      });
  EXPECT_THAT(expect_only_rule(report, "SELF_COMPARISON"), HasSubstr("the same behaviour"));
}

TEST(EvidenceGateRun, CloneWithAlteredDraftingButRescaledTimesIsSelfComparison) {
  json report = valid_run_report();
  add_clone(
      report, "spec:model:8", "spec:model:9", [](json& arm) { arm["draft_max"] = 9; },
      [](json& s) {
        s["accept_hist"].push_back(0);
        s["drafted"] = s["drafted"].get<int>() + 1;  // no longer the same behaviour
        set_decode_s(s, s["decode_s"].get<double>() * 1.25);
      });
  EXPECT_THAT(expect_only_rule(report, "SELF_COMPARISON"), HasSubstr("rescaled copies"));
}

TEST(EvidenceGateRun, DistinctArmsWithEqualConfigKeysPass) {
  // config_key is a label: equal keys on different configurations decide nothing.
  json report = valid_run_report();
  for (json& arm : report["arms"]) arm["config_key"] = "same";
  expect_clean(report);
}

TEST(EvidenceGateRun, SpeedupOfAnArmOverItselfIsSelfComparison) {
  json report = valid_run_report();
  report["summary"]["speedups"].push_back(claim("spec:model:8", "spec:model:8", 1.0));
  EXPECT_THAT(expect_only_rule(report, "SELF_COMPARISON"), HasSubstr("the same arm"));
}

TEST(EvidenceGateRun, TwoArArmsAreTheSamePath) {
  json report = valid_run_report();
  add_clone(
      report, "ar", "ar2", [](json&) {},
      [](json& s) { set_decode_s(s, s["decode_s"].get<double>() * 1.1); });
  report["summary"]["speedups"].back()["subject"] = "ar2";  // also BASELINE_AS_SUBJECT
  report["summary"]["speedups"].back()["baseline"] = "ar";
  report["summary"]["speedups"].back()["value"] =
      measured_median(report, "ar2") / measured_median(report, "ar");
  const auto text = expect_rule(report, "SELF_COMPARISON");
  EXPECT_THAT(text, HasSubstr("the same configuration (ar)"));
}

// ---- bypass 2: equivalence from the run's sampler and its data, never from a flag ----

TEST(EvidenceGateRun, GreedyFlagContradictingTheSamplerIsSchema) {
  json report = valid_run_report();
  json& sample = sample_of(report, "spec:ngram:4", "p01", 2);
  sample["tokens"][7] = 4242;
  sample["greedy"] = false;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("greedy is false but config.sampler.temperature is 0"));
}

TEST(EvidenceGateRun, AlteredTokensHiddenBehindASampledConfigStillTripEquivalence) {
  // The attacker also rewrites the sampler to temperature 0.8 and every flag to false: the AR
  // arm still decoded the same tokens in every round, which sampling does not do.
  json report = valid_run_report();
  report["config"]["sampler"]["temperature"] = 0.8;
  for_samples(
      report, [](const json&) { return true; }, [](json& s) { s["greedy"] = false; });
  sample_of(report, "spec:ngram:4", "p01", 2)["tokens"][7] = 4242;
  resummarize(report);
  const auto text = expect_only_rule(report, "EQUIVALENCE");
  EXPECT_THAT(text, HasSubstr("decodes deterministically"));
  EXPECT_THAT(text, HasSubstr("at token 7 (4242 vs"));
}

TEST(EvidenceGateRun, TopKOneIsGreedyWhateverTheTemperature) {
  json report = valid_run_report();
  report["config"]["sampler"]["temperature"] = 0.8;
  report["config"]["sampler"]["top_k"] = 1;
  for_samples(
      report, [](const json&) { return true; }, [](json& s) { s["greedy"] = false; });
  // Make the AR rounds differ, so only the configuration says "deterministic".
  sample_of(report, "ar", "p01", 4)["tokens"][3] = 77;
  sample_of(report, "spec:model:8", "p02", 1)["tokens"][9] = 78;
  resummarize(report);
  const auto text = expect_only_rule(report, "EQUIVALENCE");
  EXPECT_THAT(text, HasSubstr("arm 'spec:model:8' prompt 'p02'"));
  EXPECT_THAT(text, HasSubstr("the AR baseline is not deterministic"));
}

TEST(EvidenceGateRun, SampledRunsAreNotComparedTokenForToken) {
  json report = valid_run_report();
  report["config"]["sampler"]["temperature"] = 0.8;
  int n = 0;
  for_samples(
      report, [](const json&) { return true; },
      [&](json& s) {
        s["greedy"] = false;
        s["tokens"][1] = 500 + n++;  // every sample its own continuation
      });
  resummarize(report);
  expect_clean(report);
  EXPECT_THAT(report["summary"]["speedups"], SizeIs(2));
}

TEST(EvidenceGateRun, ChangedTokenInASpecSampleTripsEquivalenceWhateverTheSummarySays) {
  json report = valid_run_report();
  sample_of(report, "spec:ngram:4", "p02", -1)["tokens"][10] = 1;  // a warm-up counts too
  const auto text = expect_only_rule(report, "EQUIVALENCE");
  EXPECT_THAT(text, HasSubstr("repeat -1 (warm-up) at token 10 (1 vs"));
}

TEST(EvidenceGateRun, NondeterministicGreedyArTripsEquivalence) {
  json report = valid_run_report();
  sample_of(report, "ar", "p01", 3)["tokens"][0] = 5;
  EXPECT_THAT(expect_only_rule(report, "EQUIVALENCE"),
              HasSubstr("the AR baseline is not deterministic"));
}

// ---- bypass 3: a claim needs every measured sample to have drafted ----

TEST(EvidenceGateRun, ClaimOverSamplesThatMostlyNeverDraftedIsSpecNeverRan) {
  json report = valid_run_report();
  bool first = true;
  for_samples(
      report, [](const json& s) { return is_arm(s, "spec:model:8") && !s["warmup"].get<bool>(); },
      [&](json& s) {
        if (first) {
          first = false;
          return;
        }
        // Plain decoding under a spec label: one cycle per token, nothing drafted.
        s["cycles"] = 63;
        s["drafted"] = 0;
        s["accepted"] = 0;
        s["accept_hist"] = testing::accept_hist(8, 63, 0);
        s["tau"] = 1.0;
        set_decode_s(s, s["decode_s"].get<double>() * 0.95);
      });
  resummarize(report);  // the harness withholds it ...
  EXPECT_EQ(report["summary"]["withheld"][0]["rule"], "SPEC_NEVER_RAN");
  report["summary"]["speedups"].push_back(  // ... and a hand-made claim is rejected
      claim("spec:model:8", "ar",
            measured_median(report, "spec:model:8") / measured_median(report, "ar")));
  const auto text = expect_rule(report, "SPEC_NEVER_RAN");
  EXPECT_THAT(text, HasSubstr("9 of its 10 measured samples drafted nothing"));
}

TEST(EvidenceGateRun, SpecArmThatNeverDraftedFailsEvenWithoutAClaim) {
  json report = valid_run_report();
  for_samples(
      report, [](const json& s) { return is_arm(s, "spec:ngram:4"); },
      [](json& s) {
        s["cycles"] = 63;
        s["drafted"] = 0;
        s["accepted"] = 0;
        s["accept_hist"] = testing::accept_hist(4, 63, 0);
        s["tau"] = 1.0;
      });
  resummarize(report);
  EXPECT_THAT(expect_only_rule(report, "SPEC_NEVER_RAN"), HasSubstr("none of its 10"));
}

// ---- the speedup cannot exceed what drafting can give ----

TEST(EvidenceGateRun, SpeedupAboveTokensPerVerifyIsSpeedupBound) {
  json report = valid_run_report();
  // spec:ngram:4 commits 1.575 tokens per verify; make it 2x AR.
  const double ar = measured_median(report, "ar");
  int n = 0;
  for_samples(
      report, [](const json& s) { return is_arm(s, "spec:ngram:4"); },
      [&](json& s) { set_decode_s(s, 63.0 / (2.0 * ar * (1 + 0.001 * n++))); });
  resummarize(report);
  EXPECT_EQ(report["summary"]["withheld"][0]["rule"], "SPEEDUP_BOUND");
  report["summary"]["speedups"].push_back(
      claim("spec:ngram:4", "ar", measured_median(report, "spec:ngram:4") / ar));
  EXPECT_THAT(expect_only_rule(report, "SPEEDUP_BOUND"), HasSubstr("commit 1.57 tokens"));
}

// ---- derived numbers are recomputed ----

TEST(EvidenceGateRun, InflatedSpeedupValueTripsSpeedupValue) {
  json report = valid_run_report();
  report["summary"]["speedups"][1]["value"] = 1.9;
  EXPECT_THAT(expect_only_rule(report, "SPEEDUP_VALUE"), HasSubstr("claims 1.9x"));
}

TEST(EvidenceGateRun, EverySummaryFigureMustFollowFromTheSamples) {
  for (const char* path : {"/summary/arms/1/decode_tok_s/median", "/summary/arms/0/decode_tok_s/q3",
                           "/summary/arms/2/prefill_tok_s/min", "/summary/arms/2/tau_mean",
                           "/summary/arms/1/accept_rate", "/summary/arms/0/prefill_spread_max"}) {
    json report = valid_run_report();
    json& value = report[json::json_pointer(path)];
    value = value.get<double>() * 1.5;
    EXPECT_THAT(expect_rule(report, "DERIVED_VALUE"), HasSubstr("the samples give")) << path;
  }
  json report = valid_run_report();
  report["summary"]["arms"][2]["tau_hist"][3] = 99;
  EXPECT_THAT(expect_only_rule(report, "DERIVED_VALUE"), HasSubstr("tau_hist"));
}

TEST(EvidenceGateRun, SampleRatesMustFollowFromTheirTimes) {
  json report = valid_run_report();
  json& sample = sample_of(report, "spec:model:8", "p01", 2);
  sample["decode_tok_s"] = sample["decode_tok_s"].get<double>() * 1.5;
  resummarize(report);  // even with a summary that agrees
  EXPECT_THAT(expect_only_rule(report, "DERIVED_VALUE"),
              HasSubstr("is not (n_gen - 1) / decode_s"));
}

TEST(EvidenceGateRun, DraftingCountsMustAddUp) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> plants = {
      {[](json& s) {
         s["accepted"] = s["accepted"].get<int>() + 1;
         s["tau"] = double(s["accepted"].get<int>() + 30) / 30;
       },
       "accept_hist counts"},
      {[](json& s) { s["tau"] = 3.0; }, "is not (accepted + cycles) / cycles"},
      {[](json& s) { s["drafted"] = 1000; }, "cycles of at most 8"},
      {[](json& s) {
         s["cycles"] = 20;
         s["drafted"] = 100;
         s["accept_hist"] = testing::accept_hist(8, 20, 33);
         s["tau"] = 53.0 / 20;
       },
       "commit 53 tokens"},
      {[](json& s) { s["draft_s"] = s["decode_s"]; }, "exceed decode_s"},
  };
  for (const auto& [plant, message] : plants) {
    json report = valid_run_report();
    plant(sample_of(report, "spec:model:8", "p02", 0));
    resummarize(report);
    EXPECT_THAT(expect_rule(report, "DERIVED_VALUE"), HasSubstr(message));
  }
}

// ---- the remaining rules, one plant each ----

TEST(EvidenceGateRun, ArArmWithSubjectRoleIsBaselineAsSubject) {
  json report = valid_run_report();
  report["arms"][0]["role"] = "subject";
  EXPECT_THAT(expect_only_rule(report, "BASELINE_AS_SUBJECT"), HasSubstr("'ar'"));
}

TEST(EvidenceGateRun, CopiedRepeatsAreNotRepeats) {
  json report = valid_run_report();
  const json original = sample_of(report, "spec:model:8", "p01", 0);
  for (int repeat = 1; repeat < 3; ++repeat) {  // repeats 1, 2 copied from 0
    json& s = sample_of(report, "spec:model:8", "p01", repeat);
    s["decode_s"] = original["decode_s"];
    s["decode_tok_s"] = original["decode_tok_s"];
  }
  resummarize(report);
  EXPECT_EQ(report["summary"]["withheld"][0]["rule"], "SAMPLES");
  report["summary"]["speedups"].push_back(
      claim("spec:model:8", "ar",
            measured_median(report, "spec:model:8") / measured_median(report, "ar")));
  EXPECT_THAT(expect_only_rule(report, "SAMPLES"), HasSubstr("'p01' (3)"));
}

TEST(EvidenceGateRun, MissingSampleOfTheConfiguredRunIsSchema) {
  json report = valid_run_report();
  auto& samples = report["samples"];
  samples.erase(std::find(samples.begin(), samples.end(), sample_of(report, "ar", "p02", 4)));
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("first: arm 'ar' prompt 'p02' repeat 4"));
}

TEST(EvidenceGateRun, RelabellingASlowSampleAsWarmUpIsSchema) {
  json report = valid_run_report();
  sample_of(report, "spec:model:8", "p01", 2)["warmup"] = true;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("warmup is true but repeat 2"));
}

TEST(EvidenceGateRun, FewerConfiguredRepeatsTripSamples) {
  json report = valid_run_report();
  report["config"]["repeats"] = 4;
  auto& samples = report["samples"];
  samples.erase(std::remove_if(samples.begin(), samples.end(),
                               [](const json& s) { return s["repeat"] == 4; }),
                samples.end());
  resummarize(report);
  EXPECT_THAT(report["summary"]["speedups"], IsEmpty());
  report["summary"]["speedups"].push_back(
      claim("spec:ngram:4", "ar",
            measured_median(report, "spec:ngram:4") / measured_median(report, "ar")));
  EXPECT_THAT(expect_only_rule(report, "SAMPLES"), HasSubstr("fewer than 5"));
}

TEST(EvidenceGateRun, EndToEndMetricTripsDecodeOnlyMissing) {
  json report = valid_run_report();
  report["summary"]["speedups"][0]["metric"] = "end_to_end_tok_s";
  EXPECT_THAT(expect_only_rule(report, "DECODE_ONLY_MISSING"), HasSubstr("end_to_end_tok_s"));
}

TEST(EvidenceGateRun, EndToEndTimedSampleTripsScopeMismatch) {
  json report = valid_run_report();
  sample_of(report, "spec:ngram:4", "p01", 2)["timing_scope"] = "end_to_end";
  EXPECT_THAT(expect_only_rule(report, "SCOPE_MISMATCH"), HasSubstr("1 of 12 samples"));
}

TEST(EvidenceGateRun, NoisyPrefillWithASpeedupTripsPrefillVariance) {
  json report = valid_run_report();
  json& s = sample_of(report, "ar", "p01", 0);
  s["prefill_s"] = s["prefill_s"].get<double>() * 4;
  s["prefill_tok_s"] = s["n_prompt"].get<double>() / s["prefill_s"].get<double>();
  const json kept = report["summary"]["speedups"];
  resummarize(report);
  EXPECT_THAT(report["summary"]["speedups"], IsEmpty());
  report["summary"]["speedups"] = kept;
  EXPECT_THAT(expect_only_rule(report, "PREFILL_VARIANCE"), HasSubstr("prompt 'p01'"));
}

TEST(EvidenceGateRun, DecodeTokensBelowThirtyTwoTripDecodeTokens) {
  json report = valid_run_report();
  report["config"]["n_gen"] = 16;
  for_samples(
      report, [](const json&) { return true; },
      [](json& s) {
        s["n_gen"] = 16;
        s["tokens"].erase(s["tokens"].begin() + 16, s["tokens"].end());
        set_decode_s(s, s["decode_s"].get<double>() / 4);
        if (s["cycles"].get<int>() > 0) {
          const int k = int(s["accept_hist"].size()) - 1;
          s["cycles"] = 8;
          s["drafted"] = 8 * k;
          s["accepted"] = 7;
          s["accept_hist"] = testing::accept_hist(k, 8, 7);
          s["tau"] = 15.0 / 8;
        }
      });
  resummarize(report);
  EXPECT_EQ(report["summary"]["withheld"][0]["rule"], "DECODE_TOKENS");
  report["summary"]["speedups"].push_back(
      claim("spec:ngram:4", "ar",
            measured_median(report, "spec:ngram:4") / measured_median(report, "ar")));
  EXPECT_THAT(expect_only_rule(report, "DECODE_TOKENS"), HasSubstr("median of 16"));
}

// ---- memory: measured per arm ----

TEST(EvidenceGateRun, MemoryFiguresMustBeMeasuredPerArm) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> plants = {
      {[](json& r) { r["summary"]["arms"][1]["peak_rss_bytes"] = 1; }, "samples' maximum"},
      {[](json& r) { sample_of(r, "ar", "p01", 2)["peak_rss_bytes"] = -5; }, "peak_rss_bytes -5"},
      {[](json& r) { sample_of(r, "ar", "p01", 2).erase("peak_rss_bytes"); }, "missing"},
      {[](json& r) { sample_of(r, "ar", "p02", 1)["arm_bytes"] = 130000001; }, "differs"},
      {[](json& r) {
         for_samples(
             r, [](const json& s) { return is_arm(s, "spec:model:8"); },
             [](json& s) { s["arm_bytes"] = 130000000; });
       },
       "less than the 143456789 bytes"},
      {[](json& r) {
         for_samples(
             r, [](const json& s) { return is_arm(s, "spec:ngram:4"); },
             [](json& s) { s["arm_bytes"] = 125000000; });
       },
       "less than the ar arm's"},
      {[](json& r) { r["summary"]["arms"][2]["arm_bytes"] = 1; }, "the summary's arm_bytes"},
  };
  for (const auto& [plant, message] : plants) {
    json report = valid_run_report();
    plant(report);
    EXPECT_THAT(expect_only_rule(report, "MEMORY_CLAIM"), HasSubstr(message)) << message;
  }
}

// ---- structure ----

TEST(EvidenceGateRun, AbsolutePathsAreSchema) {
  json report = valid_run_report();
  report["models"][0]["path"] = "/home/someone/models/zoo.gguf";
  report["config"]["prompts_file"] = "/tmp/prompts.jsonl";
  const auto text = expect_only_rule(report, "SCHEMA");
  EXPECT_THAT(text, HasSubstr("models[0]: path '/home/someone/models/zoo.gguf' is absolute"));
  EXPECT_THAT(text, HasSubstr("prompts_file '/tmp/prompts.jsonl' is absolute"));
}

TEST(EvidenceGateRun, ReportThatIsNotAnObjectIsSchema) {
  for (const json& report : {json::array({1, 2}), json(), json("augur.bench/1"), json(3.5)}) {
    const auto violations = check_report(report);
    EXPECT_THAT(violations, SizeIs(1)) << report.dump();
    EXPECT_THAT(rules_of(violations), ElementsAre("SCHEMA"));
  }
}

TEST(EvidenceGateRun, WrongSchemaOrKindIsSchema) {
  json report = valid_run_report();
  report["schema"] = "augur.bench/2";
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("'augur.bench/2'"));
  report = valid_run_report();
  report["kind"] = "profile";
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("kind 'profile'"));
}

TEST(EvidenceGateRun, MistypedSampleFieldIsSchemaAndHidesTheEvidenceRules) {
  json report = valid_run_report();
  sample_of(report, "ar", "p01", 3)["n_gen"] = "64";
  report["summary"]["speedups"][0]["metric"] = "end_to_end_tok_s";
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("'n_gen' is string \"64\", expected an integer"));
}

TEST(EvidenceGateRun, MalformedReportsNeverThrow) {
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
      [](json& r) { r["samples"][0]["order"] = 7; },
      [](json& r) { r["samples"][0]["repeat"] = 99; },
      [](json& r) { r["arms"][1]["draft_max"] = 0; },
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
  // A summary of the wrong shape is a figure the samples do not give.
  json report = valid_run_report();
  report["summary"]["arms"][0]["decode_tok_s"] = 3;
  EXPECT_NO_THROW(expect_rule(report, "DERIVED_VALUE"));
}

TEST(EvidenceGateRun, RepeatedSchemaDefectsAreFoldedAfterTwentyLines) {
  json report = valid_run_report();
  for_samples(
      report, [](const json&) { return true; }, [](json& s) { s.erase("tokens"); });
  const auto violations = check_report(report);
  ASSERT_THAT(violations, SizeIs(21));
  EXPECT_EQ(violations.back().message, "16 more structural defects not listed");
}

}  // namespace
}  // namespace augur::bench
