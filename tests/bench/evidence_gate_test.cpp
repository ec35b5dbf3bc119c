// The evidence gate on "verify-curve" and "roofline" reports (docs/bench-report.md): every figure
// follows from the samples the report carries, and memory figures are measured.
#include "bench/evidence_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/bench_reports.h"
#include "support/gate_assertions.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kPrefillFlops;
using testing::set_prefill;
using ::testing::SizeIs;
using testing::valid_roofline_report;
using testing::valid_verify_curve_report;

const std::vector<double> kPeakGflopS = {90.1, 91.5, 89.7, 90.8, 91.0, 90.3, 90.6};

TEST(EvidenceGate, ValidVerifyCurveReportIsClean) {
  expect_clean(valid_verify_curve_report());
}

TEST(EvidenceGate, VerifyCurveDrafterThatProposedNothingNeedsNoTiming) {
  json report = valid_verify_curve_report();
  report["drafters"].push_back({{"name", "ngram"}, {"proposed", false}});
  expect_clean(report);
  report["drafters"].back()["proposed"] = true;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("drafters[2]: missing 'per_token_s'"));
}

TEST(EvidenceGate, VerifyCurveFiguresFollowFromTheirSamples) {
  json report = valid_verify_curve_report();
  report["curve"][2]["median_s"] = report["curve"][2]["median_s"].get<double>() * 0.8;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("curve[2]: 'median_s' is"));
  report = valid_verify_curve_report();
  report["curve"][6]["ratio_to_m1"] = 1.0;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("curve[6]: ratio_to_m1 is not"));
  report = valid_verify_curve_report();
  report["curve"][1].erase("samples_s");
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("curve[1]: missing 'samples_s'"));
  report = valid_verify_curve_report();
  report["drafters"][0]["per_token_s"] = 0.0001;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("drafters[0]: per_token_s 0.0001 is not the median"));
}

TEST(EvidenceGate, RooflineDecodeMedianInflatedPastItsSamplesIsSchema) {
  json report = valid_roofline_report();
  json& point = report["points"][1];
  const double inflated = point["decode_tok_s_median"].get<double>() * 1.5;
  point["decode_tok_s_median"] = inflated;
  point["decode_tok_s"]["median"] = inflated;
  point["fraction"] = inflated / point["roofline_tok_s"].get<double>();
  point["fraction_by_regime"]["dram"] = point["fraction"];
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("points[1]: 'decode_tok_s_median' is"));
}

TEST(EvidenceGate, BandwidthFiguresFollowFromTheirSamples) {
  json report = valid_roofline_report();
  report["bandwidth"][0]["gb_s_max"] = 30.0;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("bandwidth[0]: 'gb_s_max' is 30"));
}

TEST(EvidenceGate, NegativeOrMissingPeakRssIsMemoryClaim) {
  for (const json& rss : {json(-89464832), json(0), json()}) {
    for (json report : {valid_roofline_report(), valid_verify_curve_report()}) {
      if (rss.is_null()) {
        report.erase("peak_rss_bytes");
      } else {
        report["peak_rss_bytes"] = rss;
      }
      expect_only_rule(report, "MEMORY_CLAIM");
    }
  }
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

// ---- roofline reports ----

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
              HasSubstr("points[1].prefill_tok_s: 'median' is 210 but its samples give 200.8"));
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

// The int8 peak of an integer-weight model on a VNNI path: consistent figures pass; a median
// that is not its samples' median, a fraction that does not follow, or one of the pair alone is
// schema.
void set_int8_peak(json& point, const std::vector<double>& samples) {
  point["samples_peak_int8_gop_s"] = samples;
  point["peak_int8_gop_s"] = median(samples);
  point["prefill_int8_fraction"] =
      point["prefill_gflop_s"].get<double>() / point["peak_int8_gop_s"].get<double>();
}

TEST(EvidenceGate, Int8PeakThatFollowsFromItsSamplesPasses) {
  json report = valid_roofline_report();
  for (json& point : report["points"]) set_int8_peak(point, {700.0, 720.0, 710.0});
  expect_clean(report);
}

TEST(EvidenceGate, Int8PeakNotTheMedianOfItsSamplesIsSchema) {
  json report = valid_roofline_report();
  json& point = roofline_point(report);
  set_int8_peak(point, {700.0, 720.0, 710.0});
  point["peak_int8_gop_s"] = 720.0;
  point["prefill_int8_fraction"] = point["prefill_gflop_s"].get<double>() / 720.0;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("peak_int8_gop_s 720 is not the median of samples_peak_int8_gop_s"));
}

TEST(EvidenceGate, Int8FractionNotGflopsOverInt8PeakIsSchema) {
  json report = valid_roofline_report();
  json& point = roofline_point(report);
  set_int8_peak(point, {700.0, 720.0, 710.0});
  point["prefill_int8_fraction"] = 2 * point["prefill_int8_fraction"].get<double>();
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("is not prefill_gflop_s / peak_int8_gop_s"));
}

TEST(EvidenceGate, Int8FractionWithoutItsPeakIsSchema) {
  json report = valid_roofline_report();
  json& point = roofline_point(report);
  set_int8_peak(point, {700.0, 720.0, 710.0});
  point.erase("peak_int8_gop_s");
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("missing 'peak_int8_gop_s'"));
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
