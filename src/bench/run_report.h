// A "run" report (docs/bench-report.md) read into typed form, and everything that can be derived
// from its samples: per-arm summaries, whether the run decoded deterministically. The evidence
// gate judges with these; the harness writes its summary with the same functions, so there is
// one definition of every derived figure.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/evidence_schema.h"

namespace augur::bench::evidence {

// What an arm runs, from its declared fields (never from its name or config_key).
struct ArmConfig {
  std::string kind;       // "ar" | "spec"
  std::string drafter;    // spec: "model" | "ngram" | "layerskip" | ...
  int64_t draft_max = 0;  // spec
  int64_t layers = 0;     // layerskip
  int64_t ngram_max = 0;  // ngram
  std::string sources;    // auto: the sources it plans over, "model+ngram+layerskip"
  bool operator==(const ArmConfig&) const = default;
  std::string text() const;  // "spec drafter=model draft_max=8"
};

struct Arm {
  std::string name;
  std::string role;  // "baseline" | "subject"
  ArmConfig config;
};

struct Sample {
  size_t index = 0;  // position in "samples", for messages
  std::string arm;
  std::string prompt;
  std::string timing_scope;
  int64_t repeat = 0;  // warm-ups below 0
  bool warmup = false;
  bool greedy = false;
  int64_t order = 0;
  int64_t n_prompt = 0, n_gen = 0;
  int64_t cycles = 0, drafted = 0, accepted = 0;
  std::vector<int64_t> accept_hist;
  double tau = 0;
  double prefill_s = 0, prefill_tok_s = 0, decode_s = 0, decode_tok_s = 0;
  double draft_s = 0, verify_s = 0;
  std::optional<int64_t> peak_rss_bytes;  // absent: judged by MEMORY_CLAIM, not SCHEMA
  std::optional<int64_t> arm_bytes;       // absent: judged by MEMORY_CLAIM
  // The caches' figures (bench/cache_figures.h), raw: judged by MEMORY_CLAIM; null when absent.
  const nlohmann::json* cache_memory = nullptr;
  std::vector<int64_t> tokens;  // [n_gen]
  std::string label() const;    // "prompt 'p01' repeat 2"
};

struct Speedup {
  size_t index = 0;
  std::string subject, baseline, metric;
  double value = 0;
};

struct RunConfig {
  int64_t n_prompts = 0, n_gen = 0, repeats = 0, warmup = 0;
  int64_t n_ctx = 0;
  bool ignore_eos = false;
  double temperature = 0;
  int64_t top_k = 0;
};

struct RunReport {
  RunConfig config;
  std::vector<Arm> arms;
  std::map<std::string, size_t> arm_index;  // name -> position in arms
  std::vector<Sample> samples;
  std::map<std::string, const nlohmann::json*> summary_arms;  // name -> report's summary entry
  std::vector<Speedup> speedups;
  std::map<std::string, int64_t> model_bytes;  // role -> bytes

  const Arm& arm(const std::string& name) const { return arms[arm_index.at(name)]; }
  // Samples of one arm; measured only (no warm-ups) unless asked.
  std::vector<const Sample*> of(const std::string& arm, bool with_warmups = false) const;
};

// Reads the config, arms, samples and summary of a run report, recording every structural defect
// (including a run that contradicts its own configuration: a missing round, a warm-up flag that
// disagrees with its repeat number, a greedy flag that disagrees with the sampler). The summary's
// numbers are kept raw: the rules compare them with what the samples give.
// Without `with_summary` the summary is not read (a harness that has not written it yet).
RunReport read_run(const nlohmann::json& report, SchemaReader& schema, bool with_summary = true);

// Every figure of summary.arms[] for one arm, from its samples (docs/bench-report.md).
nlohmann::json derive_arm_summary(const RunReport& run, const std::string& arm);

// True when the run's output is deterministic: the sampler is greedy (temperature <= 0 or
// top-k 1), or its AR arm decoded the same tokens in every round of every prompt (whatever the
// configuration says, a run that behaves greedily is held to greedy equivalence).
bool decodes_deterministically(const RunReport& run);

}  // namespace augur::bench::evidence
