// `augur bench serve` end to end on the bundled zoo target, tiny settings: the report parses,
// holds every turn and request with the fields the gate reads, and passes `augur bench check`.
// With one repeat it claims nothing and says why (withheld), which is no violation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "test_paths.h"

namespace augur::testing {
namespace {

TEST(BenchServe, TinyRunWritesAReportTheGateAccepts) {
  const auto report_path = temp_path("serve.json"), chart_path = temp_path("serve.svg");
  const auto run = run_command(quote(augur_bin()) + " bench serve -m " +
                               quote(models_dir() / "zoo-target-q8_0.gguf") + " -md " +
                               quote(models_dir() / "zoo-draft-f16.gguf") + " --prompts " +
                               quote(models_dir() / "prompts-code.jsonl") +
                               " --clients 1,2 --repeats 1 -n 8 --requests 1 -t 2 -o " +
                               quote(report_path) + " --chart " + quote(chart_path));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto report = nlohmann::json::parse(slurp(report_path));
  EXPECT_EQ(report["kind"], "serve");
  EXPECT_EQ(report["config"]["timing_scope"], "end_to_end");
  ASSERT_EQ(report["samples"].size(), 4u);  // 2 arms x 2 client counts x 1 repeat
  for (const auto& sample : report["samples"]) {
    for (const char* key : {"wall_s", "aggregate_tok_s", "completion_tokens"}) {
      EXPECT_TRUE(sample.contains(key)) << key;
    }
    ASSERT_EQ(sample["requests"].size(), sample["clients"].get<size_t>());
    for (const auto& r : sample["requests"]) {
      EXPECT_EQ(r["completion_tokens"], 8);
      EXPECT_GT(r["latency_s"].get<double>(), 0);
      EXPECT_EQ(r["drafter"] == "none", sample["arm"] == "ar") << r.dump();
    }
  }
  EXPECT_TRUE(report["summary"]["speedups"].empty());
  ASSERT_FALSE(report["summary"]["withheld"].empty());
  EXPECT_EQ(report["summary"]["withheld"][0]["rule"], "SAMPLES");
  EXPECT_NE(run.out.find("no claim for spec at 1 clients"), std::string::npos) << run.out;
  EXPECT_EQ(slurp(chart_path).rfind("<svg", 0), 0u);

  const auto check = run_command(quote(augur_bin()) + " bench check " + quote(report_path));
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find(": ok"), std::string::npos) << check.out;
  std::filesystem::remove(report_path);
  std::filesystem::remove(chart_path);
}

}  // namespace
}  // namespace augur::testing
