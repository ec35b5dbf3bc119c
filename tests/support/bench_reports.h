// Valid benchmark reports (docs/bench-report.md) built as the harness would write them, for the
// evidence-gate tests to plant defects in. Every figure follows from its samples; the run
// report's summary comes from summarize_run (the harness's own summary), so it claims what the
// gate supports.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/evidence_gate.h"
#include "bench/statistics.h"

namespace augur::testing {

using nlohmann::json;

inline constexpr int kBenchGen = 64;
inline constexpr int kBenchRepeats = 5;
inline constexpr int64_t kTargetBytes = 123456789;
inline constexpr int64_t kDraftBytes = 20000000;

inline const std::vector<std::string>& bench_prompts() {
  static const std::vector<std::string> prompts = {"p01", "p02"};
  return prompts;
}

struct ArmPlan {
  std::string name, kind, drafter;
  int draft_max = 0;
  double decode_tok_s = 0;      // rate of repeat 0; later repeats drift a little
  int cycles = 0, drafted = 0;  // per sample; accepted = kBenchGen - 1 - cycles
  int64_t arm_bytes = 0;
};

inline const std::vector<ArmPlan>& arm_plans() {
  static const std::vector<ArmPlan> plans = {
      {"ar", "ar", "", 0, 310.0, 0, 0, 130000000},
      {"spec:ngram:4", "spec", "ngram", 4, 362.0, 40, 120, 130000064},
      {"spec:model:8", "spec", "model", 8, 421.0, 30, 200, 152000000}};
  return plans;
}

// What greedy decoding of a prompt yields; identical for every arm of a lossless engine.
inline std::vector<int> greedy_tokens(size_t prompt) {
  std::vector<int> tokens(kBenchGen);
  for (int pos = 0; pos < kBenchGen; ++pos)
    tokens[pos] = int(100 * (prompt + 1) + (pos * 37) % 251);
  return tokens;
}

// cycles that keep `accepted` drafts in all, at most k each: the first ones keep k.
inline std::vector<int> accept_hist(int k, int cycles, int accepted) {
  std::vector<int> hist(size_t(k) + 1, 0);
  for (int c = 0; c < cycles; ++c) {
    const int keep = std::min(k, accepted);
    ++hist[size_t(keep)];
    accepted -= keep;
  }
  if (accepted != 0) throw std::logic_error("test bug: too many accepted drafts for the cycles");
  return hist;
}

inline json bench_header(const std::string& kind) {
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
                                   {"bytes", kTargetBytes},
                                   {"arch", "llama"},
                                   {"tensor_types", {{"Q8_0", 56}, {"F32", 17}}}},
                                  {{"role", "draft"},
                                   {"path", "models/zoo-draft-f16.gguf"},
                                   {"sha256", std::string(64, 'c')},
                                   {"bytes", kDraftBytes},
                                   {"arch", "llama"},
                                   {"tensor_types", {{"F16", 20}, {"F32", 9}}}}})}};
}

// A clean greedy "run": 2 prompts x arms ar + spec:ngram:4 + spec:model:8, 1 warm-up + 5
// measured rounds, arm order rotating; timings distinct per sample (as real clocks give).
inline json sample_json(const ArmPlan& plan, size_t arm, size_t prompt, int repeat, int order) {
  const bool warmup = repeat < 0;
  const double jitter = 1.0 + 0.0007 * double(prompt) + 0.00013 * double(arm) - 0.004 * repeat;
  const double decode_s = (kBenchGen - 1) / (plan.decode_tok_s * jitter) * (warmup ? 1.07 : 1.0);
  const int n_prompt = prompt == 0 ? 37 : 52;
  const double prefill_s = 0.0012 * n_prompt * (1.0 + 0.02 * (repeat + 1) + 0.001 * double(arm));
  const bool spec = plan.kind == "spec";
  const int accepted = spec ? kBenchGen - 1 - plan.cycles : 0;
  return {
      {"arm", plan.name},
      {"prompt", bench_prompts()[prompt]},
      {"repeat", repeat},
      {"warmup", warmup},
      {"order", order},
      {"timing_scope", "decode_only"},
      {"greedy", true},
      {"n_prompt", n_prompt},
      {"n_gen", kBenchGen},
      {"prefill_s", prefill_s},
      {"prefill_tok_s", n_prompt / prefill_s},
      {"decode_s", decode_s},
      {"decode_tok_s", (kBenchGen - 1) / decode_s},
      {"cycles", plan.cycles},
      {"drafted", plan.drafted},
      {"accepted", accepted},
      {"tau", spec ? double(accepted + plan.cycles) / plan.cycles : 0.0},
      {"accept_hist",
       spec ? accept_hist(plan.draft_max, plan.cycles, accepted) : std::vector<int>{}},
      {"draft_s", spec ? 0.15 * decode_s : 0.0},
      {"verify_s", spec ? 0.6 * decode_s : 0.0},
      {"peak_rss_bytes", 151000000 + 4096 * int64_t(arm) + 512 * (repeat + 1) + int64_t(prompt)},
      {"arm_bytes", plan.arm_bytes},
      {"tokens", greedy_tokens(prompt)}};
}

inline json valid_run_report() {
  json report = bench_header("run");
  report["config"] = {{"prompts_file", "bench/prompts.jsonl"},
                      {"prompts_sha256", std::string(64, 'b')},
                      {"n_prompts", int(bench_prompts().size())},
                      {"n_gen", kBenchGen},
                      {"repeats", kBenchRepeats},
                      {"warmup", 1},
                      {"threads", 2},
                      {"ubatch", 512},
                      {"n_ctx", 512},
                      {"ignore_eos", true},
                      {"sampler",
                       {{"temperature", 0},
                        {"top_k", 40},
                        {"top_p", 0.95},
                        {"min_p", 0.05},
                        {"repeat_penalty", 1}}},
                      {"seed", 1},
                      {"peak_rss_scope", "sample"}};
  report["arms"] = json::array();
  for (const ArmPlan& plan : arm_plans()) {
    json arm = {{"name", plan.name},
                {"kind", plan.kind},
                {"role", plan.kind == "ar" ? "baseline" : "subject"},
                {"config_key", plan.kind == "ar" ? "ar" : "spec/" + plan.drafter}};
    if (plan.kind == "spec") {
      arm["drafter"] = plan.drafter;
      arm["draft_max"] = plan.draft_max;
      if (plan.drafter == "ngram") arm["ngram_max"] = 4;
    }
    report["arms"].push_back(arm);
  }
  report["samples"] = json::array();
  const size_t n_arms = arm_plans().size();
  for (int repeat = -1; repeat < kBenchRepeats; ++repeat) {
    for (size_t prompt = 0; prompt < bench_prompts().size(); ++prompt) {
      for (size_t order = 0; order < n_arms; ++order) {
        const size_t arm = (order + size_t(repeat + 1) + prompt) % n_arms;
        report["samples"].push_back(sample_json(arm_plans()[arm], arm, prompt, repeat, int(order)));
      }
    }
  }
  report["summary"] = bench::summarize_run(report);
  return report;
}

// Recomputes the summary from the (edited) samples, as a harness that wrote them would.
inline void resummarize(json& report) {
  report["summary"] = bench::summarize_run(report);
}

inline json& sample_of(json& report, const std::string& arm, const std::string& prompt,
                       int repeat) {
  for (json& sample : report["samples"]) {
    if (sample["arm"] == arm && sample["prompt"] == prompt && sample["repeat"] == repeat) {
      return sample;
    }
  }
  throw std::runtime_error("test bug: no such sample");
}

// A verify curve at two contexts, M = 1..4, nine timed forwards per point.
inline json valid_verify_curve_report() {
  json report = bench_header("verify-curve");
  report["config"] = {{"max_m", 4}, {"contexts", {256, 1024}}, {"repeats", 9}, {"threads", 2}};
  report["curve"] = json::array();
  for (int ctx : {256, 1024}) {
    const double m1_s = ctx == 256 ? 0.0021 : 0.0034;
    double m1_median = 0;
    for (int m = 1; m <= 4; ++m) {
      std::vector<double> times;
      for (int r = 0; r < 9; ++r) times.push_back(m1_s * (1.0 + 0.06 * (m - 1)) * (1 + 0.003 * r));
      const json sp = bench::spread(times);
      const double median_s = sp["median"].get<double>();
      if (m == 1) m1_median = median_s;
      report["curve"].push_back({{"ctx", ctx},
                                 {"m", m},
                                 {"median_s", median_s},
                                 {"min_s", sp["min"]},
                                 {"max_s", sp["max"]},
                                 {"q1_s", sp["q1"]},
                                 {"q3_s", sp["q3"]},
                                 {"ratio_to_m1", median_s / m1_median},
                                 {"samples_s", times}});
    }
  }
  report["drafters"] = json::array();
  for (const auto& [name, per_token] : {std::pair{"model", 0.0004}, {"layerskip:4", 0.0009}}) {
    const std::vector<double> samples = {per_token * 1.02, per_token, per_token * 0.99};
    report["drafters"].push_back({{"name", name},
                                  {"proposed", true},
                                  {"per_token_s", bench::median(samples)},
                                  {"per_token_spread", bench::spread(samples)},
                                  {"samples_per_token_s", samples}});
  }
  report["peak_rss_bytes"] = 61000000;
  return report;
}

inline constexpr int64_t kPrefillTokens = 512;
inline constexpr int64_t kPrefillFlops = 30'720'000'000;  // 60 MFLOP per token

// Writes a roofline point's prefill fields from its samples, as the harness does.
inline void set_prefill(json& point, const std::vector<double>& tok_s,
                        const std::vector<double>& peak, int64_t prefill_flops) {
  const double tok_s_median = bench::median(tok_s), peak_median = bench::median(peak);
  const double gflop_s = double(prefill_flops) / double(kPrefillTokens) * tok_s_median / 1e9;
  point["prefill_tok_s_median"] = tok_s_median;
  point["prefill_tok_s"] = bench::spread(tok_s);
  point["samples_prefill_tok_s"] = tok_s;
  point["prefill_gflop_s"] = gflop_s;
  point["peak_gflop_s"] = peak_median;
  point["samples_peak_gflop_s"] = peak;
  point["prefill_peak_fraction"] = gflop_s / peak_median;
}

// A clean roofline at 1 and 2 threads, dram regime, with prefill figures on both points.
inline json valid_roofline_report() {
  json report = bench_header("roofline");
  report["config"] = {{"threads", {1, 2}},
                      {"ctx", 256},
                      {"n_gen", 64},
                      {"prompt_tokens", 224},
                      {"repeats", 5},
                      {"warmup", 1},
                      {"ubatch", 512},
                      {"bandwidth_buffer_bytes", 536870912},
                      {"bandwidth_repeats", 3},
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
    std::vector<double> decode = {231.0, 234.0, 236.5, 229.8, 235.1};
    for (double& v : decode) v *= threads == 1 ? 1.0 : 1.32;
    const double achieved = bench::median(decode);
    json point = {{"threads", threads},
                  {"regime", "dram"},
                  {"roofline_tok_s", roofline},
                  {"decode_tok_s_median", achieved},
                  {"decode_tok_s", bench::spread(decode)},
                  {"samples_decode_tok_s", decode},
                  {"roofline_tok_s_by_regime", {{"dram", roofline}}},
                  {"fraction_by_regime", {{"dram", achieved / roofline}}},
                  {"fraction", achieved / roofline}};
    std::vector<double> tok_s = {101.0, 98.5, 103.2, 99.9, 100.4};
    std::vector<double> peak = {90.1, 91.5, 89.7, 90.8, 91.0, 90.3, 90.6};
    for (double& v : tok_s) v *= threads;
    for (double& v : peak) v *= threads;
    set_prefill(point, tok_s, peak, kPrefillFlops);
    report["points"].push_back(point);
  }
  report["peak_rss_bytes"] = 88000000;
  return report;
}

inline constexpr int kServeRepeats = 5;
inline constexpr int kServeRequests = 2;  // per client per repeat
inline constexpr int kServeTokens = 64;
inline constexpr int kServePrompts = 16;

// What greedy decoding answers to a prompt: the same for both arms of a lossless server.
inline std::string serve_text(int64_t prompt) {
  return "    return x_" + std::to_string(prompt) + " + 1\n";
}

// A turn of `clients` clients x kServeRequests requests of arm ar or spec, timings distinct per
// turn (as real clocks give); the spec arm drafts (auto) and is ~1.3x faster.
inline json serve_sample_json(const std::string& arm, int clients, int repeat, int order) {
  const bool spec = arm == "spec";
  const double per_request_s =
      (spec ? 0.16 : 0.21) * (1.0 + 0.15 * (clients - 1)) * (1.0 + (spec ? 0.0047 : 0.0031) * repeat);
  json requests = json::array();
  double longest_client_s = 0;
  for (int client = 0; client < clients; ++client) {
    double busy_s = 0;
    for (int q = 0; q < kServeRequests; ++q) {
      const int64_t prompt =
          (int64_t{repeat} * clients * kServeRequests + client * kServeRequests + q) %
          kServePrompts;
      const double latency_s = per_request_s * (1.0 + 0.01 * client + 0.002 * q);
      busy_s += latency_s;
      requests.push_back({{"client", client},
                          {"prompt", prompt},
                          {"latency_s", latency_s},
                          {"ttft_s", 0.1 * latency_s},
                          {"completion_tokens", kServeTokens},
                          {"text", serve_text(prompt)},
                          {"drafter", spec ? "auto" : "none"},
                          {"cycles", spec ? 30 : 0},
                          {"drafted", spec ? 90 : 0},
                          {"accepted", spec ? 33 : 0},
                          {"prompt_tokens_reused", 0},
                          {"prefill_s", 0.02 * latency_s},
                          {"decode_s", 0.9 * latency_s}});
    }
    longest_client_s = std::max(longest_client_s, busy_s);
  }
  const double wall_s = longest_client_s * 1.02;
  const int64_t tokens = int64_t{clients} * kServeRequests * kServeTokens;
  return {{"arm", arm},
          {"clients", clients},
          {"repeat", repeat},
          {"order", order},
          {"wall_s", wall_s},
          {"completion_tokens", tokens},
          {"aggregate_tok_s", double(tokens) / wall_s},
          {"requests", requests}};
}

// A clean serve report: arms ar and spec, 1 and 4 clients, 5 repeats, arms alternating; its
// summary from summarize_serve, so it claims a speedup at each client count.
inline json valid_serve_report() {
  json report = bench_header("serve");
  report["config"] = {{"prompts_file", "prompts-code.jsonl"},
                      {"prompts_sha256", std::string(64, 'b')},
                      {"n_prompts", kServePrompts},
                      {"clients", {1, 4}},
                      {"parallel", 4},
                      {"queue", 16},
                      {"repeats", kServeRepeats},
                      {"requests_per_client", kServeRequests},
                      {"max_tokens", kServeTokens},
                      {"warmup_requests", 1},
                      {"threads", 2},
                      {"n_ctx", 512},
                      {"ubatch", 512},
                      {"temperature", 0},
                      {"ignore_eos", true},
                      {"stream", true},
                      {"timing_scope", "end_to_end"},
                      {"interleaved", true}};
  report["arms"] = json::array({{{"name", "ar"}, {"kind", "ar"}, {"drafter", "none"}},
                                {{"name", "spec"},
                                 {"kind", "spec"},
                                 {"drafter", "auto"},
                                 {"draft", "auto"},
                                 {"draft_max", 8}}});
  report["samples"] = json::array();
  for (int clients : {1, 4}) {
    for (int repeat = 0; repeat < kServeRepeats; ++repeat) {
      const bool ar_first = repeat % 2 == 0;
      report["samples"].push_back(serve_sample_json(ar_first ? "ar" : "spec", clients, repeat, 0));
      report["samples"].push_back(serve_sample_json(ar_first ? "spec" : "ar", clients, repeat, 1));
    }
  }
  report["peak_rss_bytes"] = 210000000;
  report["summary"] = bench::summarize_serve(report);
  return report;
}

inline json& serve_sample_of(json& report, const std::string& arm, int clients, int repeat) {
  for (json& sample : report["samples"]) {
    if (sample["arm"] == arm && sample["clients"] == clients && sample["repeat"] == repeat) {
      return sample;
    }
  }
  throw std::runtime_error("test bug: no such serve sample");
}

}  // namespace augur::testing
