// MEMORY_CLAIM over a run report's cache figures (samples[].cache_memory): a report whose figures
// follow from their raw inputs passes; each planted defect — bytes that are not layers x heads x
// slots x row bytes, a ring larger than the context, a peak RSS or arm_bytes below the caches it
// must hold, a ratio the figures do not give, a missing figure — is caught from the numbers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "bench/cache_figures.h"
#include "bench/evidence_gate.h"
#include "support/bench_reports.h"
#include "support/gate_assertions.h"
#include "support/reference.h"
#include "test_paths.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::resummarize;
using testing::sample_of;
using testing::valid_run_report;

// A cache's figures, derived from its raw inputs as the harness writes them.
json figures(int64_t n_ctx, int64_t heads, int64_t row, int64_t full_layers, int64_t window_layers,
             int64_t window, int64_t window_slots) {
  const int64_t full_bytes = full_layers * heads * n_ctx * row;
  const int64_t window_bytes = window_layers * heads * window_slots * row;
  return {{"n_ctx", n_ctx},
          {"n_heads_kv", heads},
          {"k_row_bytes", row / 2},
          {"v_row_bytes", row / 2},
          {"full", {{"layers", full_layers}, {"slots", n_ctx}, {"bytes", full_bytes}}},
          {"window",
           {{"layers", window_layers},
            {"window", window},
            {"slots", window_slots},
            {"bytes", window_bytes}}},
          {"recurrent", {{"layers", 0}, {"layer_bytes", 0}, {"bytes", 0}}},
          {"kv_bytes", full_bytes + window_bytes},
          {"state_bytes", 0},
          {"kv_ratio_to_full", double(full_bytes + window_bytes) /
                                   double((full_layers + window_layers) * heads * n_ctx * row)}};
}

// The valid report with cache figures on every sample: a Gemma-3-like target (1 full layer, 5
// windowed) and, for the model-drafter arm, a draft model's full cache.
json report_with_caches() {
  json report = valid_run_report();
  for (json& s : report["samples"]) {
    s["cache_memory"] = {{"target_cache", figures(512, 2, 512, 1, 5, 16, 80)},
                         {"draft_caches", json::object()}};
    if (s["arm"] == "spec:model:8") {
      s["cache_memory"]["draft_caches"]["model"] = figures(512, 1, 256, 4, 0, 0, 0);
    }
  }
  return report;
}

json& target_of(json& report, const std::string& arm = "ar") {
  return sample_of(report, arm, "p01", 2)["cache_memory"]["target_cache"];
}

TEST(EvidenceGateMemory, ConsistentCacheFiguresPass) {
  expect_clean(report_with_caches());
  expect_clean(valid_run_report());  // a report without cache figures claims none
}

TEST(EvidenceGateMemory, FiguresTheHarnessWritesRecomputeCleanly) {
  const json f = figures(512, 2, 512, 1, 5, 16, 80);
  EXPECT_THAT(cache_figure_problems(f, 512), ::testing::IsEmpty());
  EXPECT_EQ(cache_figure_bytes(f), 1 * 2 * 512 * 512 + 5 * 2 * 80 * 512);
  EXPECT_THAT(cache_figure_problems(f, 1024), ::testing::ElementsAre(HasSubstr("n_ctx is 512")));
}

TEST(EvidenceGateMemory, EachPlantedDefectIsAMemoryClaim) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> plants = {
      // KV bytes inconsistent with their raw inputs (the total kept in step, so only the
      // product is wrong).
      {[](json& r) {
         json& t = target_of(r);
         t["window"]["bytes"] = t["window"]["bytes"].get<int64_t>() + 512;
         t["kv_bytes"] = t["kv_bytes"].get<int64_t>() + 512;
       },
       "window.bytes is 410112, but layers 5 x n_heads_kv 2 x slots 80 x row bytes 512"},
      {[](json& r) { target_of(r)["kv_bytes"] = 1; }, "kv_bytes is 1, but full.bytes"},
      {[](json& r) { target_of(r)["k_row_bytes"] = 128; }, "full.bytes is 524288, but"},
      {[](json& r) {
         json& t = target_of(r);
         t["full"]["slots"] = 256;
         t["full"]["bytes"] = 256 * 2 * 512;
         t["kv_bytes"] = 256 * 2 * 512 + 409600;
         t["kv_ratio_to_full"] = double(256 * 2 * 512 + 409600) / (6 * 2 * 512 * 512);
       },
       "full.slots is 256, but a full layer holds a row per position of n_ctx 512"},
      {[](json& r) {
         sample_of(r, "spec:model:8", "p02", 0)["cache_memory"]["draft_caches"]["model"] =
             figures(1024, 1, 256, 4, 0, 0, 0);
       },
       "n_ctx is 1024, but the run's context is 512"},
      // A ring bigger than the context, or too small for its window (figures consistent).
      {[](json& r) { target_of(r) = figures(512, 2, 512, 1, 5, 16, 600); }, "window.slots is 600"},
      {[](json& r) { target_of(r) = figures(512, 2, 512, 1, 5, 16, 8); }, "window.slots is 8"},
      {[](json& r) {
         json& t = target_of(r);
         t["recurrent"] = {{"layers", 2}, {"layer_bytes", 1000}, {"bytes", 1000}};
         t["state_bytes"] = 1000;
       },
       "recurrent.bytes is 1000, but layers 2 x layer_bytes 1000 is 2000"},
      // Peak RSS below the cache rows it must include.
      {[](json& r) { sample_of(r, "ar", "p02", 3)["peak_rss_bytes"] = 900000; },
       "peak_rss_bytes 900000, less than the 933888 bytes its caches hold"},
      {[](json& r) {
         for (json& s : r["samples"]) {
           if (s["arm"] == "spec:model:8")
             s["arm_bytes"] = testing::kTargetBytes + testing::kDraftBytes + 100;
         }
         resummarize(r);
       },
       "less than its model files' 143456789 bytes plus the"},
      // A memory ratio the recorded numbers do not give.
      {[](json& r) { target_of(r)["kv_ratio_to_full"] = 0.25; },
       "kv_ratio_to_full is number 0.25, but kv_bytes 933888 over a full cache's 3145728 bytes"},
      {[](json& r) { target_of(r)["kv_ratio_to_full"] = "30%"; }, "kv_ratio_to_full is"},
      // Missing figures.
      {[](json& r) { target_of(r)["window"].erase("slots"); }, "window.slots is missing"},
      {[](json& r) { target_of(r).erase("n_heads_kv"); }, "n_heads_kv is missing"},
      {[](json& r) { sample_of(r, "ar", "p01", 1)["cache_memory"].erase("target_cache"); },
       "target_cache: is null, expected an object"},
      {[](json& r) { sample_of(r, "spec:ngram:4", "p01", 0).erase("cache_memory"); },
       "cache_memory is missing, but other samples report their caches"},
      {[](json& r) {
         for (json& s : r["samples"]) {
           if (s["arm"] == "spec:model:8") s["cache_memory"]["draft_caches"].erase("model");
         }
       },
       "draft_caches holds 0 cache(s) of none, but the arm's drafter keeps one per source of "
       "model"},
      {[](json& r) {
         sample_of(r, "spec:ngram:4", "p01", 1)["cache_memory"]["draft_caches"]["model"] =
             figures(512, 1, 256, 4, 0, 0, 0);
       },
       "draft_caches holds 1 cache(s) of model, but the arm's drafter keeps one per source of "
       "none"},
      // One arm's caches are allocated once: its samples agree.
      {[](json& r) { target_of(r) = figures(512, 2, 512, 1, 5, 16, 97); },
       "differs from the arm's first sample's"},
  };
  for (const auto& [plant, message] : plants) {
    json report = report_with_caches();
    plant(report);
    EXPECT_THAT(expect_only_rule(report, "MEMORY_CLAIM"), HasSubstr(message)) << message;
  }
}

}  // namespace
}  // namespace augur::bench

namespace augur::bench {
namespace {

// A committed report with EAGLE-3 arms: the head is a model of its own (role "head"), and the
// arms that read it must hold its bytes; a report that drops the head's entry, or claims arms
// smaller than the files they read, is caught from the numbers.
TEST(EvidenceGateMemory, Eagle3ArmsHoldTheirHead) {
  const json report =
      testing::read_json(testing::source_dir() / "bench" / "reports" / "eagle3-zoo-q8_0-t0.json");
  expect_clean(report);
  json no_head = report;
  auto& models = no_head["models"];
  models.erase(std::remove_if(models.begin(), models.end(),
                              [](const json& m) { return m["role"] == "head"; }),
               models.end());
  EXPECT_THAT(expect_rule(no_head, "MEMORY_CLAIM"), HasSubstr("no model has the role 'head'"));
  json huge_head = report;
  for (json& m : huge_head["models"]) {
    if (m["role"] == "head") m["bytes"] = int64_t{1} << 40;
  }
  EXPECT_THAT(expect_rule(huge_head, "MEMORY_CLAIM"), HasSubstr("of the model file(s) it reads"));
}

}  // namespace
}  // namespace augur::bench
