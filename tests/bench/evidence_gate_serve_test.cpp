// The evidence gate on "serve" reports (`augur bench serve`, docs/bench-report.md): a clean
// report claims a speedup per client count; each planted defect trips its rule and no other;
// attacks that name no rule (a drafter that reports "none", a summary from a subset of repeats,
// a shrunk wall time, copied timings) are caught too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "bench/evidence_gate.h"
#include "bench/svg_charts.h"
#include "support/bench_reports.h"
#include "support/gate_assertions.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::serve_sample_of;
using ::testing::SizeIs;
using testing::valid_serve_report;

// The summary as the samples give it, with a claim at every client count whatever the rules say
// (a harness that claims regardless), each claim's value the ratio of the cells' medians: only
// the rule under test can object.
void claim_everything(json& report) {
  report["summary"] = summarize_serve(report);
  json& summary = report["summary"];
  summary["speedups"] = json::array();
  summary["withheld"] = json::array();
  for (const json& clients : report["config"]["clients"]) {
    double spec = 0, ar = 0;
    for (const json& cell : summary["cells"]) {
      if (cell["clients"] != clients) continue;
      (cell["arm"] == "spec" ? spec : ar) = cell["aggregate_tok_s"]["median"].get<double>();
    }
    summary["speedups"].push_back({{"clients", clients},
                                   {"subject", "spec"},
                                   {"baseline", "ar"},
                                   {"metric", "aggregate_tok_s_median"},
                                   {"value", spec / ar}});
  }
}

void for_spec_requests(json& report, const std::function<void(json&)>& edit) {
  for (json& sample : report["samples"]) {
    if (sample["arm"] != "spec") continue;
    for (json& request : sample["requests"]) edit(request);
  }
}

// A turn's aggregate figures again from its (edited) requests and wall_s, as a harness would.
void recount(json& sample) {
  int64_t tokens = 0;
  for (const json& r : sample["requests"]) tokens += r["completion_tokens"].get<int64_t>();
  sample["completion_tokens"] = tokens;
  sample["aggregate_tok_s"] = double(tokens) / sample["wall_s"].get<double>();
}

json& cell_of(json& report, const std::string& arm, int clients) {
  for (json& cell : report["summary"]["cells"]) {
    if (cell["arm"] == arm && cell["clients"] == clients) return cell;
  }
  throw std::runtime_error("test bug: no such cell");
}

TEST(EvidenceGateServe, CleanReportClaimsASpeedupAtEveryClientCount) {
  const json report = valid_serve_report();
  expect_clean(report);
  EXPECT_THAT(report["summary"]["speedups"], SizeIs(2));
  EXPECT_THAT(report["summary"]["withheld"], IsEmpty());
  const double value = report["summary"]["speedups"][0]["value"].get<double>();
  EXPECT_GT(value, 1.2);
  EXPECT_LT(value, 1.4);
}

TEST(EvidenceGateServe, FewerThanFiveRepeatsMakeNoClaim) {
  json report = valid_serve_report();
  report["config"]["repeats"] = 3;
  json kept = json::array();
  for (const json& sample : report["samples"]) {
    if (sample["repeat"].get<int>() < 3) kept.push_back(sample);
  }
  report["samples"] = kept;
  report["summary"] = summarize_serve(report);
  expect_clean(report);  // the harness withholds the claim: no violation, no claim
  EXPECT_THAT(report["summary"]["speedups"], IsEmpty());
  EXPECT_EQ(report["summary"]["withheld"][0]["rule"], "SAMPLES");
  claim_everything(report);
  EXPECT_THAT(expect_only_rule(report, "SAMPLES"), HasSubstr("3 distinct measured repeats"));
}

TEST(EvidenceGateServe, CopiedRepeatsAreNotRepeats) {
  json report = valid_serve_report();
  for (int repeat = 1; repeat < testing::kServeRepeats; ++repeat) {
    json& copy = serve_sample_of(report, "spec", 4, repeat);
    copy = serve_sample_of(report, "spec", 4, 0);
    copy["repeat"] = repeat;
  }
  // The copies' prompts are those of repeat 0, whose texts are AR's: only the count is wrong.
  claim_everything(report);
  EXPECT_THAT(expect_only_rule(report, "SAMPLES"), HasSubstr("at 4 clients"));
}

TEST(EvidenceGateServe, SpecArmWhoseDrafterNeverRanCannotClaim) {
  json report = valid_serve_report();
  for_spec_requests(report, [](json& r) {
    r["cycles"] = 0;
    r["drafted"] = 0;
    r["accepted"] = 0;
  });
  report["summary"] = summarize_serve(report);
  EXPECT_THAT(report["summary"]["speedups"], IsEmpty());
  EXPECT_THAT(expect_only_rule(report, "SPEC_NEVER_RAN"), HasSubstr("measured plain decoding"));
  claim_everything(report);
  expect_only_rule(report, "SPEC_NEVER_RAN");
}

TEST(EvidenceGateServe, SpecRequestsThatReportNoDrafterDidNotDraftWhateverTheirCounts) {
  json report = valid_serve_report();  // counts say 30 cycles; the server said "none"
  for_spec_requests(report, [](json& r) { r["drafter"] = "none"; });
  EXPECT_THAT(expect_only_rule(report, "SPEC_NEVER_RAN"), HasSubstr("report drafter 'none'"));
}

TEST(EvidenceGateServe, SpecTextThatDiffersFromArIsCaught) {
  json report = valid_serve_report();
  serve_sample_of(report, "spec", 4, 2)["requests"][5]["text"] = "    return x + 2\n";
  report["summary"] = summarize_serve(report);  // the harness withholds: a text differs
  EXPECT_THAT(report["summary"]["speedups"], IsEmpty());
  EXPECT_THAT(expect_only_rule(report, "EQUIVALENCE"),
              HasSubstr("arm 'spec': 1 greedy request(s) over 1 prompt(s)"));
  claim_everything(report);
  expect_only_rule(report, "EQUIVALENCE");
}

TEST(EvidenceGateServe, ArTextsMustAgreeWithEachOther) {
  json report = valid_serve_report();
  serve_sample_of(report, "ar", 1, 4)["requests"][0]["text"] = "    pass\n";
  report["summary"] = summarize_serve(report);
  EXPECT_THAT(expect_only_rule(report, "EQUIVALENCE"), HasSubstr("arm 'ar'"));
}

TEST(EvidenceGateServe, InflatedSummaryFigureIsCaught) {
  json report = valid_serve_report();
  cell_of(report, "spec", 4)["aggregate_tok_s"]["median"] =
      1.2 * cell_of(report, "spec", 4)["aggregate_tok_s"]["median"].get<double>();
  EXPECT_THAT(expect_only_rule(report, "DERIVED_VALUE"),
              HasSubstr("summary cell of arm 'spec' at 4 clients: 'aggregate_tok_s.median'"));
  report = valid_serve_report();
  cell_of(report, "ar", 1)["latency_s"]["p95"] = 0.001;
  expect_only_rule(report, "DERIVED_VALUE");
}

TEST(EvidenceGateServe, InflatedSpeedupIsCaught) {
  json report = valid_serve_report();
  json& claim = report["summary"]["speedups"][1];
  claim["value"] = 1.5 * claim["value"].get<double>();
  EXPECT_THAT(expect_only_rule(report, "SPEEDUP_VALUE"), HasSubstr("the samples give"));
}

TEST(EvidenceGateServe, SummaryFromASubsetOfRepeatsIsCaught) {
  json report = valid_serve_report();
  json subset = report;  // the spec arm's fastest three repeats only
  json kept = json::array();
  for (const json& sample : subset["samples"]) {
    if (sample["repeat"].get<int>() < 3) kept.push_back(sample);
  }
  subset["samples"] = kept;
  subset["config"]["repeats"] = 3;
  const json subset_summary = summarize_serve(subset);
  for (const json& cell : subset_summary["cells"]) {
    if (cell["arm"] != "spec") continue;
    json forged = cell;
    forged["n_repeats"] = testing::kServeRepeats;  // the forger keeps the counts plausible
    forged["n_requests"] = cell_of(report, "spec", cell["clients"].get<int>())["n_requests"];
    forged["completion_tokens"] =
        cell_of(report, "spec", cell["clients"].get<int>())["completion_tokens"];
    cell_of(report, "spec", cell["clients"].get<int>()) = forged;
  }
  expect_only_rule(report, "DERIVED_VALUE");
}

TEST(EvidenceGateServe, DroppedTurnsContradictTheConfiguration) {
  json report = valid_serve_report();
  json kept = json::array();
  for (const json& sample : report["samples"]) {
    if (!(sample["arm"] == "spec" && sample["repeat"] == 4)) kept.push_back(sample);
  }
  report["samples"] = kept;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("no sample of arm 'spec', 1 clients, repeat 4"));
}

TEST(EvidenceGateServe, ShrunkWallTimeIsCaughtEvenWhenTheRatesAgree) {
  json report = valid_serve_report();
  for (json& sample : report["samples"]) {
    if (sample["arm"] != "spec") continue;
    sample["wall_s"] = 0.6 * sample["wall_s"].get<double>();
    recount(sample);
  }
  claim_everything(report);
  EXPECT_THAT(expect_only_rule(report, "WALL_CLOCK"), HasSubstr("client 0 spent"));
}

TEST(EvidenceGateServe, CopiedAndRescaledTimingsAreASelfComparison) {
  json report = valid_serve_report();
  for (int clients : {1, 4}) {
    for (int repeat = 0; repeat < testing::kServeRepeats; ++repeat) {
      json& spec = serve_sample_of(report, "spec", clients, repeat);
      spec["wall_s"] = 0.8 * serve_sample_of(report, "ar", clients, repeat)["wall_s"].get<double>();
      recount(spec);
    }
  }
  claim_everything(report);
  EXPECT_THAT(expect_only_rule(report, "SELF_COMPARISON"), HasSubstr("rescaled copies"));
}

TEST(EvidenceGateServe, SpecArmDeclaredWithoutADrafterIsTheArPath) {
  json report = valid_serve_report();
  report["arms"][1]["drafter"] = "none";
  expect_rule(report, "SELF_COMPARISON");
}

TEST(EvidenceGateServe, ClaimForTheArArmIsABaselineAsSubject) {
  json report = valid_serve_report();
  report["summary"]["speedups"][0]["subject"] = "ar";
  report["summary"]["speedups"][0]["baseline"] = "spec";
  report["summary"]["speedups"][0]["value"] =
      1.0 / report["summary"]["speedups"][0]["value"].get<double>();
  expect_rule(report, "BASELINE_AS_SUBJECT");
}

TEST(EvidenceGateServe, ShortCompletionsMakeNoClaim) {
  json report = valid_serve_report();
  report["config"]["max_tokens"] = 16;
  for (json& sample : report["samples"]) {
    for (json& r : sample["requests"]) {
      r["completion_tokens"] = 16;
      if (sample["arm"] == "spec") {
        r["cycles"] = 8;
        r["drafted"] = 24;
        r["accepted"] = 7;
      }
    }
    recount(sample);
  }
  claim_everything(report);
  expect_only_rule(report, "DECODE_TOKENS");
}

TEST(EvidenceGateServe, MissingFieldsAndWrongTypesAreSchemaDefects) {
  json report = valid_serve_report();
  report["samples"][3]["requests"][0].erase("latency_s");
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"),
              HasSubstr("samples[3].requests[0]: missing 'latency_s'"));
  report = valid_serve_report();
  report["samples"][2]["wall_s"] = "0.5";
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("samples[2]: 'wall_s' is string"));
  report = valid_serve_report();
  report["config"].erase("clients");
  expect_only_rule(report, "SCHEMA");
  report = valid_serve_report();
  report["samples"][0]["requests"][0]["text"] = 17;
  expect_only_rule(report, "SCHEMA");
  report = valid_serve_report();
  report["summary"].erase("cells");
  expect_only_rule(report, "SCHEMA");
}

TEST(EvidenceGateServe, ContradictionsOfTheConfigurationAreSchemaDefects) {
  json report = valid_serve_report();
  report["config"]["temperature"] = 0.8;
  EXPECT_THAT(expect_only_rule(report, "SCHEMA"), HasSubstr("a serve report is greedy"));
  report = valid_serve_report();
  report["config"]["prompts_file"] = "/home/me/prompts.jsonl";
  expect_only_rule(report, "SCHEMA");
  report = valid_serve_report();
  report["samples"][5]["requests"][1]["ttft_s"] = 9.0;
  expect_only_rule(report, "SCHEMA");
  report = valid_serve_report();  // a client that sent one request fewer
  report["samples"][4]["requests"].erase(report["samples"][4]["requests"].begin());
  expect_only_rule(report, "SCHEMA");
  report = valid_serve_report();
  report["samples"][4]["requests"][0]["completion_tokens"] = 63;  // ignore_eos: 64 each
  expect_only_rule(report, "SCHEMA");
}

TEST(EvidenceGateServe, UnmeasuredMemoryIsAMemoryClaim) {
  json report = valid_serve_report();
  report.erase("peak_rss_bytes");
  expect_only_rule(report, "MEMORY_CLAIM");
}

TEST(EvidenceGateServe, ChartPlotsEveryArm) {
  const std::string svg = serve_chart(valid_serve_report());
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr(">spec</text>"));
  EXPECT_THAT(svg, HasSubstr(">ar</text>"));
}

}  // namespace
}  // namespace augur::bench
