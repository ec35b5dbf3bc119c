// A short real benchmark through the CLI, run once (2 prompts, 5 repeats + 1 warm-up, 40 tokens:
// enough for a claim): the report has every sample, rotates arm order, measures memory per arm,
// passes the evidence gate, claims what its samples support (the value recomputed here), and a
// planted defect in it makes `augur bench check` fail. Behaviour only: no timing thresholds, and
// no verdict that hangs on how busy the machine was (the noise rule is exercised on steadied
// copies of the samples).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "bench/arms.h"
#include "bench/evidence_gate.h"
#include "common/error.h"
#include "support/reference.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using testing::run_command;

std::string q(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

testing::CommandResult run_bench(const std::filesystem::path& dir) {
  return run_command(
      q(testing::augur_bin()) + " bench run -m " +
      q(testing::models_dir() / "zoo-target-q8_0.gguf") + " -md " +
      q(testing::models_dir() / "zoo-draft-f16.gguf") +
      " --arms ar,spec:model:3,spec:ngram:3,spec:layerskip:2:2,spec:auto --prompts " +
      q(dir / "prompts.jsonl") + " --n-gen 40 --repeats 5 --warmup 1 -t 2 --out " +
      q(dir / "report.json") + " --svg " + q(dir / "svg"));
}

TEST(ShortBench, MeasuresEveryArmClaimsWhatItsSamplesSupportAndPassesTheGate) {
  const auto dir = testing::temp_path("bench");
  std::filesystem::create_directories(dir);
  {
    std::ofstream prompts(dir / "prompts.jsonl");
    const auto lines = testing::read_jsonl(testing::models_dir() / "prompts-code.jsonl");
    ASSERT_GE(lines.size(), 2u);
    prompts << lines[0].dump() << "\n" << lines[1].dump() << "\n";
  }
  const auto result = run_bench(dir);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json r = testing::read_json(dir / "report.json");
  EXPECT_TRUE(check_report(r).empty()) << format_violations(check_report(r));

  // Every arm on every prompt in every round, arm order rotating.
  EXPECT_EQ(r["samples"].size(), 5u * 2u * 6u);
  std::map<std::string, int> measured;
  std::set<std::string> first;
  std::map<std::string, std::set<int64_t>> arm_bytes;
  for (const auto& s : r["samples"]) {
    if (!s["warmup"].get<bool>())
      ++measured[s["arm"].get<std::string>() + "/" + s["prompt"].get<std::string>()];
    if (s["order"].get<int>() == 0) first.insert(s["arm"].get<std::string>());
    EXPECT_EQ(s["timing_scope"], "decode_only");
    EXPECT_EQ(s["n_gen"], 40);
    EXPECT_GT(s["peak_rss_bytes"].get<int64_t>(), 0);
    arm_bytes[s["arm"].get<std::string>()].insert(s["arm_bytes"].get<int64_t>());
  }
  EXPECT_EQ(measured.size(), 10u);
  for (const auto& [key, n] : measured) EXPECT_EQ(n, 5) << key;
  EXPECT_EQ(first.size(), 5u) << "arm order does not rotate";

  // The auto arm's samples say what its policy chose, and its counts add up to the sample's.
  for (const auto& s : r["samples"]) {
    ASSERT_EQ(s.contains("policy"), s["arm"] == "spec:auto") << s["arm"];
    if (!s.contains("policy")) continue;
    int64_t cycles = s["policy"]["ar_steps"].get<int64_t>();
    for (const auto& [source, n] : s["policy"]["cycles_by_source"].items()) {
      EXPECT_TRUE(source == "model" || source == "ngram" || source.rfind("layerskip:", 0) == 0)
          << source;
      cycles += n.get<int64_t>();
    }
    EXPECT_EQ(cycles, s["cycles"].get<int64_t>());
  }
  for (const auto& a : r["arms"]) {
    if (a["name"] == "spec:auto") {
      EXPECT_EQ(a["sources"], "model+ngram+layerskip");
    }
  }

  // Memory per arm: constant within an arm; the draft model's arm holds its weights on top.
  for (const auto& [arm, bytes] : arm_bytes) EXPECT_EQ(bytes.size(), 1u) << arm;
  const int64_t draft_file =
      int64_t(std::filesystem::file_size(testing::models_dir() / "zoo-draft-f16.gguf"));
  EXPECT_GE(*arm_bytes["spec:model:3"].begin() - *arm_bytes["ar"].begin(), draft_file);
  EXPECT_GT(*arm_bytes["spec:layerskip:2:2"].begin(), *arm_bytes["ar"].begin());
  // auto holds the draft model and two layer-skip caches.
  EXPECT_GT(*arm_bytes["spec:auto"].begin(), *arm_bytes["spec:model:3"].begin());
  EXPECT_EQ(r["config"]["peak_rss_scope"], "sample");

  // Reports name files without the machine's absolute paths.
  EXPECT_EQ(r["models"][0]["path"], "zoo-target-q8_0.gguf");
  EXPECT_EQ(r["config"]["prompts_file"].get<std::string>().find('/'), std::string::npos);

  // Every drafter ran; greedy arms match AR.
  for (const auto& a : r["summary"]["arms"]) {
    if (a["name"] != "ar") {
      EXPECT_GT(a["drafted"].get<int64_t>(), 0) << a["name"];
    }
  }
  EXPECT_TRUE(r["summary"]["equivalence"].empty());

  // Every spec arm is either claimed, at the ratio of the measured medians, or withheld with the
  // rule that forbids it. On a busy machine (CI runs this beside other tests) the prefill times
  // may spread past the gate's limit (PREFILL_VARIANCE), a verdict this test must not hang on.
  std::map<std::string, std::vector<double>> rates;
  for (const auto& s : r["samples"]) {
    if (!s["warmup"].get<bool>())
      rates[s["arm"].get<std::string>()].push_back(s["decode_tok_s"].get<double>());
  }
  const auto claims_of = [&](const json& summary) {
    std::set<std::string> claimed;
    for (const auto& c : summary["speedups"]) {
      const std::string subject = c["subject"].get<std::string>();
      claimed.insert(subject);
      EXPECT_EQ(c["baseline"], "ar");
      EXPECT_NEAR(c["value"].get<double>(), median_of(rates[subject]) / median_of(rates["ar"]),
                  1e-9);
    }
    for (const char* arm : {"spec:model:3", "spec:ngram:3", "spec:layerskip:2:2", "spec:auto"}) {
      bool withheld = false;
      for (const auto& w : summary["withheld"]) withheld |= w["arm"] == arm;
      EXPECT_NE(claimed.count(arm) != 0, withheld) << arm;
    }
    return claimed;
  };
  // The policy and the n-gram source may leave a sample without drafts (SPEC_NEVER_RAN); the draft
  // model drafts on every cycle.
  claims_of(r["summary"]);
  for (const auto& w : r["summary"]["withheld"]) {
    EXPECT_TRUE(w["rule"] == "PREFILL_VARIANCE" ||
                (w["rule"] == "SPEC_NEVER_RAN" && w["arm"] != "spec:model:3"))
        << w;
  }
  // The same samples with steadier prefill times (each clamped to within 1.5x of its arm and
  // prompt's median, so arms stay distinct measurements): the draft-model arm is claimed.
  // (Decode speeds and tokens are the run's own.)
  json steady = r;
  std::map<std::string, std::vector<double>> prefills;
  const auto cell = [](const json& s) {
    return s["arm"].get<std::string>() + "/" + s["prompt"].get<std::string>();
  };
  for (const auto& s : r["samples"]) prefills[cell(s)].push_back(s["prefill_s"].get<double>());
  for (auto& s : steady["samples"]) {
    const double median = median_of(prefills[cell(s)]);
    s["prefill_s"] = std::clamp(s["prefill_s"].get<double>(), median / 1.5, median * 1.5);
  }
  const json steady_summary = summarize_run(steady);
  EXPECT_TRUE(claims_of(steady_summary).count("spec:model:3")) << steady_summary["withheld"];
  for (const auto& w : steady_summary["withheld"]) EXPECT_NE(w["rule"], "PREFILL_VARIANCE") << w;
  EXPECT_TRUE(std::filesystem::exists(dir / "svg" / "decode_tok_s.svg"));
  EXPECT_NE(result.out.find("spec:model:3"), std::string::npos) << "no table on stdout";

  // bench check passes the report and fails a planted defect.
  const auto ok = run_command(q(testing::augur_bin()) + " bench check " + q(dir / "report.json"));
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  json bad = r;
  for (auto& s : bad["samples"]) {
    if (s["arm"] == "spec:ngram:3" && !s["warmup"].get<bool>()) {
      s["tokens"][3] = s["tokens"][3].get<int>() + 1;  // a greedy arm that diverged from AR
      break;
    }
  }
  std::ofstream(dir / "bad.json") << bad.dump();
  const auto b = run_command(q(testing::augur_bin()) + " bench check " + q(dir / "bad.json"));
  EXPECT_EQ(b.exit_code, 4);  // the report breaks an evidence rule
  EXPECT_NE(b.out.find("EQUIVALENCE"), std::string::npos) << b.out;

  // Not JSON: a bad file (exit 1), not a verdict of the gate.
  std::ofstream(dir / "garbage.json") << "{not json";
  const auto g = run_command(q(testing::augur_bin()) + " bench check " + q(dir / "garbage.json"));
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_NE(g.err.find("not a JSON report"), std::string::npos) << g.err;
  std::filesystem::remove_all(dir);
}

TEST(BenchArms, ParsesEveryFormAndRejectsBadOnes) {
  const auto arms = parse_arms("ar,spec:model:8,spec:ngram:4,spec:ngram:4:2,spec:layerskip:4:8");
  ASSERT_EQ(arms.size(), 5u);
  EXPECT_FALSE(arms[0].spec);
  EXPECT_EQ(arms[1].drafter, "model");
  EXPECT_EQ(arms[1].draft_max, 8);
  EXPECT_EQ(arms[3].ngram_max, 2);
  EXPECT_EQ(arms[4].layers, 4);
  EXPECT_EQ(arms[4].draft_max, 8);
  EXPECT_NE(arms[2].config_key(), arms[3].config_key());
  const auto autos = parse_arms("spec:auto,spec:auto:4,spec:auto:ngram+model,spec:auto:ngram:6");
  ASSERT_EQ(autos.size(), 4u);
  EXPECT_EQ(autos[0].drafter, "auto");
  EXPECT_EQ(autos[0].draft_max, 8);
  EXPECT_EQ(autos[0].auto_sources, "");
  EXPECT_EQ(autos[1].draft_max, 4);
  EXPECT_EQ(autos[2].auto_sources, "model+ngram");  // canonical order
  EXPECT_EQ(autos[3].auto_sources, "ngram");
  EXPECT_EQ(autos[3].draft_max, 6);
  // An acceptance rule per arm: a configuration of its own, the rest parsed as without it.
  const auto rules = parse_arms("spec:model:8,spec:model:8@token,spec:auto:ngram:6@block");
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_FALSE(rules[0].rule.has_value());
  EXPECT_EQ(rules[1].rule, spec::SampledRule::kToken);
  EXPECT_EQ(rules[1].draft_max, 8);
  EXPECT_EQ(rules[1].name, "spec:model:8@token");
  EXPECT_NE(rules[0].config_key(), rules[1].config_key());
  EXPECT_EQ(rules[2].rule, spec::SampledRule::kBlock);
  EXPECT_EQ(rules[2].auto_sources, "ngram");
  EXPECT_EQ(rules[2].draft_max, 6);
  for (const char* bad : {"",
                          "spec",
                          "spec:model",
                          "spec:model:0",
                          "spec:model:33",
                          "spec:model:x",
                          "spec:layerskip:4",
                          "spec:foo:3",
                          "ar:1",
                          "ar,ar",
                          "spec:ngram:4,spec:ngram:4:4",
                          "spec:auto:bogus",
                          "spec:auto:ngram+ngram",
                          "spec:auto:0",
                          "spec:auto:ngram:4:1",
                          "spec:auto,spec:auto:8",
                          "spec:auto:model+ngram,spec:auto:ngram+model",
                          "ar@token",
                          "spec:model:8@",
                          "spec:model:8@greedy",
                          "spec:model@token:8",
                          "spec:model:8@token,spec:model:8@token"}) {
    EXPECT_THROW(parse_arms(bad), InvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace augur::bench
