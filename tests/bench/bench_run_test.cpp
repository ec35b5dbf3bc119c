// A short real benchmark (2 prompts, 5 repeats + 1 warm-up, a few tokens) through the CLI: the
// report has every sample, rotates arm order, passes the evidence gate, and a planted defect in
// it makes `augur bench check` fail. Behaviour only: no timing thresholds.
#include <gtest/gtest.h>

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

class ShortBench : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::temp_path("bench"));
    std::filesystem::create_directories(*dir_);
    // Two prompts from the shared file.
    std::ofstream prompts(*dir_ / "prompts.jsonl");
    const auto lines = testing::read_jsonl(testing::models_dir() / "prompts-code.jsonl");
    prompts << lines[0].dump() << "\n" << lines[1].dump() << "\n";
    prompts.close();
    const auto cmd = fmt_cmd();
    result_ = new testing::CommandResult(run_command(cmd));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete result_;
  }
  static std::string fmt_cmd() {
    return q(testing::augur_bin()) + " bench run -m " +
           q(testing::models_dir() / "zoo-target-q8_0.gguf") + " -md " +
           q(testing::models_dir() / "zoo-draft-f16.gguf") +
           " --arms ar,spec:model:2,spec:ngram:2,spec:layerskip:2:2 --prompts " +
           q(*dir_ / "prompts.jsonl") + " --n-gen 12 --repeats 5 --warmup 1 -t 2 --out " +
           q(*dir_ / "report.json") + " --svg " + q(*dir_ / "svg");
  }
  static json report() { return testing::read_json(*dir_ / "report.json"); }

  static std::filesystem::path* dir_;
  static testing::CommandResult* result_;
};
std::filesystem::path* ShortBench::dir_ = nullptr;
testing::CommandResult* ShortBench::result_ = nullptr;

TEST_F(ShortBench, RunsEveryArmOnEveryPromptAndPassesTheGate) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  const json r = report();
  EXPECT_TRUE(check_report(r).empty()) << format_violations(check_report(r));
  EXPECT_EQ(r["samples"].size(), 4u * 2u * 6u);
  std::map<std::string, int> measured;
  for (const auto& s : r["samples"]) {
    if (!s["warmup"].get<bool>())
      ++measured[s["arm"].get<std::string>() + "/" + s["prompt"].get<std::string>()];
    EXPECT_EQ(s["timing_scope"], "decode_only");
    EXPECT_EQ(s["n_gen"], 12);
    EXPECT_GT(s["peak_rss_bytes"].get<int64_t>(), 0);
  }
  EXPECT_EQ(measured.size(), 8u);
  for (const auto& [key, n] : measured) EXPECT_EQ(n, 5) << key;
  // Every drafter ran; greedy arms match AR.
  for (const auto& a : r["summary"]["arms"]) {
    if (a["name"] != "ar") EXPECT_GT(a["drafted"].get<int64_t>(), 0) << a["name"];
  }
  EXPECT_TRUE(r["summary"]["equivalence"].empty());
  // 12 tokens is too few for a speed claim: the harness withholds it and says why.
  EXPECT_TRUE(r["summary"]["speedups"].empty());
  bool decode_tokens_withheld = false;
  for (const auto& w : r["summary"]["withheld"])
    decode_tokens_withheld |= w["rule"] == "DECODE_TOKENS";
  EXPECT_TRUE(decode_tokens_withheld);
  EXPECT_TRUE(std::filesystem::exists(*dir_ / "svg" / "decode_tok_s.svg"));
  EXPECT_NE(result_->out.find("spec:model:2"), std::string::npos) << "no table on stdout";
}

TEST_F(ShortBench, ArmOrderRotatesSoNoArmIsAlwaysFirst) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  std::set<std::string> first;
  const json r = report();
  for (const auto& s : r["samples"]) {
    if (s["order"].get<int>() == 0) first.insert(s["arm"].get<std::string>());
  }
  EXPECT_EQ(first.size(), 4u);
}

TEST_F(ShortBench, CheckPassesTheReportAndFailsAPlantedDefect) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  const auto ok = run_command(q(testing::augur_bin()) + " bench check " + q(*dir_ / "report.json"));
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;

  json bad = report();
  for (auto& s : bad["samples"]) {
    if (s["arm"] == "spec:ngram:2" && !s["warmup"].get<bool>()) {
      s["tokens"][3] = s["tokens"][3].get<int>() + 1;  // a greedy arm that diverged from AR
      break;
    }
  }
  std::ofstream(*dir_ / "bad.json") << bad.dump();
  const auto r = run_command(q(testing::augur_bin()) + " bench check " + q(*dir_ / "bad.json"));
  EXPECT_EQ(r.exit_code, 4);  // the report breaks an evidence rule
  EXPECT_NE(r.out.find("EQUIVALENCE"), std::string::npos) << r.out;

  // Not JSON: a bad file (exit 1), not a verdict of the gate.
  std::ofstream(*dir_ / "garbage.json") << "{not json";
  const auto g = run_command(q(testing::augur_bin()) + " bench check " + q(*dir_ / "garbage.json"));
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_NE(g.err.find("not a JSON report"), std::string::npos) << g.err;
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
  for (const char* bad :
       {"", "spec", "spec:model", "spec:model:0", "spec:model:33", "spec:model:x",
        "spec:layerskip:4", "spec:foo:3", "ar:1", "ar,ar", "spec:ngram:4,spec:ngram:4:4"}) {
    EXPECT_THROW(parse_arms(bad), InvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace augur::bench
