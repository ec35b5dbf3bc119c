// The evidence gate over "serve" reports (`augur bench serve`, docs/bench-report.md): the
// server's aggregate throughput per client count, arm "spec" against arm "ar". Read into typed
// form here; every summary figure and every claim is re-derived from the samples (the harness
// writes its summary with summarize_serve, the same derivation), and the speculative arm's
// greedy texts must equal the AR arm's prompt by prompt.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/evidence_schema.h"

namespace augur::bench::evidence {

struct ServeRequest {
  int64_t client = 0, prompt = 0;
  double latency_s = 0, ttft_s = 0;  // end to end: request sent -> last byte / first text
  int64_t completion_tokens = 0;
  std::string text;
  std::string drafter;  // as the server reported it ("none": no drafter ran)
  int64_t cycles = 0, drafted = 0, accepted = 0;
};

struct ServeSample {
  size_t index = 0;  // position in "samples", for messages
  std::string arm;
  int64_t clients = 0, repeat = 0;
  double wall_s = 0;  // the whole turn: first client started -> last client done
  int64_t completion_tokens = 0;
  double aggregate_tok_s = 0;
  std::vector<ServeRequest> requests;
  std::string label() const;  // "samples[3] (arm 'spec', 4 clients, repeat 1)"
};

struct ServeArm {
  std::string name, kind, drafter;  // kind "ar" | "spec"; drafter "none" for ar
};

struct ServeClaim {
  size_t index = 0;
  int64_t clients = 0;
  std::string subject, baseline, metric;
  double value = 0;
};

struct ServeReport {
  std::vector<int64_t> clients;
  int64_t repeats = 0, requests_per_client = 0, max_tokens = 0, n_prompts = 0;
  bool ignore_eos = false;
  std::vector<ServeArm> arms;
  std::vector<ServeSample> samples;
  std::vector<ServeClaim> claims;                 // summary.speedups
  const nlohmann::json* summary_cells = nullptr;  // the report's summary.cells, raw

  const ServeArm* arm(const std::string& name) const;
  const ServeArm* ar_arm() const;  // the first arm of kind "ar"
  std::vector<const ServeSample*> cell(const std::string& arm, int64_t clients) const;
};

// Reads config, arms and samples (and, with_summary, the summary), recording every structural
// defect in `schema`, including a report that contradicts its configuration (a missing or
// duplicate (arm, clients, repeat), a turn without clients x requests_per_client requests).
ServeReport read_serve(const nlohmann::json& report, SchemaReader& schema, bool with_summary);

// summary.cells[] of one (arm, clients), from its samples.
nlohmann::json derive_serve_cell(const ServeReport& serve, const std::string& arm, int64_t clients);

// What forbids claiming `claim`; empty when the samples support it.
std::vector<Violation> serve_claim_violations(const ServeReport& serve, const ServeClaim& claim);

// The summary: cells, and per client count a speedup of each spec arm over the ar arm, or the
// rules that withhold it.
nlohmann::json summarize_serve(const ServeReport& serve);

// Structural defects go to `schema`; returns the evidence violations (none when the schema is
// not clean).
std::vector<Violation> check_serve(const nlohmann::json& report, SchemaReader& schema);

}  // namespace augur::bench::evidence
