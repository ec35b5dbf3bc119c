// `augur bench serve`: the OpenAI server's aggregate throughput under 1..N concurrent clients,
// arm ar (--draft none) against arm spec (--draft, default auto), end to end over loopback HTTP
// (src/cli/serve_bench.h). A table on stdout, progress on stderr; the report (kind "serve") is
// written once it passes the evidence gate, the chart (--chart) with it.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/svg_charts.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/serve_bench.h"
#include "common/error.h"

namespace augur::cli {
namespace {

using nlohmann::json;

struct ServeBenchArgs {
  ServeBenchConfig config;
  std::string clients = "1,4,16";
  std::string out, chart;
  bool quiet = false;
};

void print_serve_table(const json& report) {
  const auto& summary = report["summary"];
  std::map<int64_t, double> speedup;
  for (const auto& s : summary["speedups"]) speedup[s["clients"]] = s["value"].get<double>();
  fmt::print("{:<6} {:>7} {:>14} {:>19} {:>12} {:>12} {:>6} {:>8}\n", "arm", "clients", "agg tok/s",
             "min-max", "p50 lat s", "p95 lat s", "tau", "speedup");
  for (const auto& c : summary["cells"]) {
    const auto& rate = c["aggregate_tok_s"];
    if (rate.empty()) continue;
    const int64_t clients = c["clients"].get<int64_t>();
    const bool spec = c["arm"] != "ar";
    fmt::print("{:<6} {:>7} {:>14.1f} {:>19} {:>12.3f} {:>12.3f} {:>6} {:>8}\n",
               c["arm"].get<std::string>(), clients, rate["median"].get<double>(),
               fmt::format("{:.1f}-{:.1f}", rate["min"].get<double>(), rate["max"].get<double>()),
               c["latency_s"]["p50"].get<double>(), c["latency_s"]["p95"].get<double>(),
               c["cycles"].get<int64_t>() > 0 ? fmt::format("{:.2f}", c["tau"].get<double>()) : "-",
               spec && speedup.contains(clients) ? fmt::format("{:.2f}x", speedup[clients]) : "-");
  }
  for (const auto& w : summary["withheld"]) {
    fmt::print("no claim for {} at {} clients: {} ({})\n", w["arm"].get<std::string>(),
               w["clients"].get<int64_t>(), w["reason"].get<std::string>(),
               w["rule"].get<std::string>());
  }
  std::fflush(stdout);
}

}  // namespace

void add_bench_serve_subcommand(CLI::App& bench, int& exit_code) {
  auto args = std::make_shared<ServeBenchArgs>();
  auto* s = bench.add_subcommand(
      "serve", "the server's aggregate tok/s under concurrent clients, ar vs spec (end to end)");
  auto& c = args->config;
  // The last of a repeated option wins: scripts/bench-serve.sh appends overrides to its defaults.
  s->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c.runtime.add_options(*s);  // -m, -t, -c, --ubatch
  c.draft.add_options(*s);    // --draft, -md, --draft-max (the spec arm's drafter)
  s->add_option("--clients", args->clients, "concurrent client counts, e.g. 1,4,16")
      ->capture_default_str();
  s->add_option("--parallel", c.parallel,
                "server sessions (also -np; default: the largest client count)")
      ->check(CLI::Range(1, 256));
  s->add_option("--prompts", c.prompts_path,
                "JSONL, one {\"prompt\"} per line (default: ../shared/models/prompts-code.jsonl, "
                "or under AUGUR_SHARED_DIR)");
  s->add_option("-n,--n-predict", c.max_tokens, "max_tokens of every request (ignore_eos)")
      ->capture_default_str();
  s->add_option("--requests", c.requests_per_client, "requests per client per repeat, back to back")
      ->capture_default_str();
  s->add_option("--repeats", c.repeats, "measured repeats per arm and client count (>= 5 to claim)")
      ->capture_default_str();
  s->add_option("-o,--out", args->out, "report JSON path")->required();
  s->add_option("--chart", args->chart, "also write the throughput chart (SVG) here");
  s->add_flag("-q,--quiet", args->quiet, "no progress lines");
  s->callback([args, &exit_code] {
    args->config.clients.clear();
    for (int64_t n : parse_list(args->clients, "--clients")) {
      args->config.clients.push_back(static_cast<int>(n));
    }
    const bool quiet = args->quiet;
    const json report = run_serve_benchmark(args->config, [quiet](const std::string& line) {
      if (!quiet) std::fprintf(stderr, "bench serve: %s\n", line.c_str());
    });
    print_serve_table(report);
    exit_code = gate_and_write(report, args->out);
    if (exit_code == kExitOk && !args->chart.empty()) {
      std::ofstream chart(args->chart, std::ios::binary);
      chart << bench::serve_chart(report);
      if (!chart.flush()) throw Error(fmt::format("cannot write chart '{}'", args->chart));
      std::fprintf(stderr, "wrote %s\n", args->chart.c_str());
    }
  });
}

}  // namespace augur::cli
