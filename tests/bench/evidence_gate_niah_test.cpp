// The gate over "niah" reports: recall is recomputed from the samples, every configured cell must
// be sampled, and a cell has one kv_bytes.
#include <gtest/gtest.h>

#include "bench/evidence_gate.h"
#include "bench/evidence_niah.h"

namespace augur::bench {
namespace {

using nlohmann::json;

json sample(int64_t context, const char* type, int depth, bool found, int64_t kv_bytes) {
  return {{"context", context},
          {"cache_type", type},
          {"depth_pct", depth},
          {"needle", "A"},
          {"needle_position", 1},
          {"value_tokens", {5, 6}},
          {"greedy_tokens", found ? json{5, 6} : json{5, 7}},
          {"token_probs", {0.5, found ? 0.75 : 0.25}},
          {"kv_bytes", kv_bytes}};
}

json report() {
  json r = {{"schema", "augur.bench/1"},
            {"kind", "niah"},
            {"created", "2026-12-04T00:00:00Z"},
            {"machine",
             {{"cpu", "x"},
              {"cores", 2},
              {"threads_used", 2},
              {"memory_bytes", 1},
              {"isa", "avx2"},
              {"os", "linux"}}},
            {"build",
             {{"commit", "abc"},
              {"dirty", false},
              {"compiler", "gcc"},
              {"build_type", "Release"},
              {"flags", ""}}},
            {"models", json::array({{{"role", "target"}, {"bytes", 1}}})}};
  r["config"] = {{"contexts", {512}},
                 {"depths_pct", {0, 100}},
                 {"cache_types", {"f32", "q8_0"}},
                 {"needles", 1}};
  r["samples"] = {sample(512, "f32", 0, true, 100), sample(512, "f32", 100, true, 100),
                  sample(512, "q8_0", 0, false, 30), sample(512, "q8_0", 100, true, 30)};
  r["summary"] = evidence::niah_summary(r["samples"]);
  return r;
}

// The niah rules alone (the common header has its own tests).
std::string violations(const json& r) {
  evidence::SchemaReader schema;
  auto out = evidence::check_niah(r, schema);
  schema.emit(out);
  return format_violations(out);
}

TEST(EvidenceGateNiah, ACleanReportPasses) {
  const json r = report();
  EXPECT_EQ(violations(r), "");
  EXPECT_DOUBLE_EQ(r["summary"][1]["recall"].get<double>(), 0.5);  // q8_0: 1 of 2
  EXPECT_DOUBLE_EQ(r["summary"][1]["mean_value_prob"].get<double>(), (0.125 + 0.375) / 2);
}

TEST(EvidenceGateNiah, ARecallTheSamplesDoNotGiveFails) {
  json r = report();
  r["summary"][1]["recall"] = 1.0;
  EXPECT_NE(violations(r).find("recall"), std::string::npos) << violations(r);
  r = report();
  r["samples"][2]["greedy_tokens"] = {5, 6};  // now recovered, summary still says not
  EXPECT_NE(violations(r), "");
}

TEST(EvidenceGateNiah, AMissingCellOrTwoKvFiguresFail) {
  json r = report();
  r["samples"].erase(3);
  r["summary"] = evidence::niah_summary(r["samples"]);
  EXPECT_NE(violations(r).find("depth 100%"), std::string::npos) << violations(r);
  r = report();
  r["samples"][3]["kv_bytes"] = 31;
  EXPECT_NE(violations(r).find("kv_bytes"), std::string::npos) << violations(r);
}

}  // namespace
}  // namespace augur::bench
