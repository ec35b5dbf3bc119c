// `augur bench serve`: the OpenAI server's throughput under concurrent clients, measured end to
// end over loopback HTTP. Two servers run in-process, built exactly as `augur serve` builds them
// (ServeSetup): arm "ar" (--draft none) and arm "spec" (the given drafter). For each client count
// and repeat, the arms take turns (their order alternating between repeats); in a turn, C client
// threads each send R streaming greedy /v1/completions requests back to back. The report (kind
// "serve", docs/bench-report.md) holds every request and every repeat's wall time; its summary is
// bench::summarize_serve's, the gate's own derivation. This file owns the measuring; the gate
// owns the judging (src/bench/evidence_serve.*).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/draft_options.h"
#include "cli/model_loading.h"

namespace augur::cli {

struct ServeBenchConfig {
  RuntimeOptions runtime;  // -m, -t, -c (0: longest prompt + max_tokens + slack), --ubatch
  DraftOptions draft;      // the spec arm's drafter (empty draft: auto)
  std::vector<int> clients = {1, 4, 16};
  int parallel = 0;  // server sessions; 0: the largest client count
  std::string prompts_path;
  int max_tokens = 64;          // per request (ignore_eos: every request generates this many)
  int requests_per_client = 2;  // per repeat, back to back
  int repeats = 5;
};

// Called with a line of progress (no newline).
using ServeBenchProgress = std::function<void(const std::string& line)>;

// Runs the benchmark and returns the report (summary included). InvalidArgument for a bad
// configuration; Error when a request fails (the report would not measure the server).
nlohmann::json run_serve_benchmark(const ServeBenchConfig& config,
                                   const ServeBenchProgress& progress = {});

}  // namespace augur::cli
