// `augur bench roofline`: read bandwidth, bytes per decode step, the roofline tok/s and the
// achieved fraction of it per thread count, and prefill tok/s against the peak FMA throughput
// (src/bench/roofline.h). A table on stdout, progress on
// stderr; with --out, the report (kind "roofline") is written once it passes the evidence gate.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/evidence_gate.h"
#include "bench/roofline.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "common/error.h"

namespace augur::cli {
namespace {

using nlohmann::json;

struct RooflineArgs {
  bench::RooflineConfig config;
  std::string threads;
  int64_t l3_mib = -1;
  std::string out;
  bool quiet = false;
};

std::string megabytes(int64_t bytes) {
  return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6);
}

void print_table(const json& report) {
  const auto& config = report["config"];
  fmt::print("bytes/step {} = weights {} + KV {} (ctx {}); L3 {}; roofline regime: {}\n",
             megabytes(report["bytes_per_step"].get<int64_t>()),
             megabytes(report["weight_bytes"].get<int64_t>()),
             megabytes(report["kv_bytes"].get<int64_t>()), config["ctx"].get<int64_t>(),
             config["l3_bytes"].get<int64_t>() > 0
                 ? fmt::format("{} MiB", config["l3_bytes"].get<int64_t>() >> 20)
                 : std::string("unknown"),
             report["regime"].get<std::string>());
  const int64_t prefill_tokens = config.value("prefill_tokens", int64_t{0});
  if (prefill_tokens > 0) {
    fmt::print("prefill {} tokens = {:.2f} GFLOP; peak: FMA chains on every thread\n",
               prefill_tokens, report["prefill_flops"].get<double>() / 1e9);
  }
  fmt::print("{:>7} {:>10} {:>10} {:>14} {:>14} {:>12} {:>9} {:>12} {:>12} {:>10} {:>9}\n",
             "threads", "dram GB/s", "cache GB/s", "roofline t/s", "roof dram t/s", "decode t/s",
             "fraction", "prefill t/s", "prefill GF/s", "peak GF/s", "of peak");
  for (const auto& point : report["points"]) {
    const int threads = point["threads"].get<int>();
    std::string dram = "-", cache = "-";
    for (const auto& b : report["bandwidth"]) {
      if (b["threads"].get<int>() != threads) continue;
      const auto gb_s = fmt::format("{:.2f}", b["gb_s_median"].get<double>());
      (b["regime"] == "dram" ? dram : cache) = gb_s;
    }
    std::string prefill = "-", prefill_gflop = "-", peak = "-", of_peak = "-";
    if (point.contains("prefill_tok_s_median")) {
      prefill = fmt::format("{:.1f}", point["prefill_tok_s_median"].get<double>());
      prefill_gflop = fmt::format("{:.2f}", point["prefill_gflop_s"].get<double>());
      peak = fmt::format("{:.2f}", point["peak_gflop_s"].get<double>());
      of_peak = fmt::format("{:.1f}%", 100 * point["prefill_peak_fraction"].get<double>());
    }
    fmt::print(
        "{:>7} {:>10} {:>10} {:>14.1f} {:>14.1f} {:>12.1f} {:>8.1f}% {:>12} {:>12} {:>10} {:>9}\n",
        threads, dram, cache, point["roofline_tok_s"].get<double>(),
        point["roofline_tok_s_by_regime"]["dram"].get<double>(),
        point["decode_tok_s_median"].get<double>(), 100 * point["fraction"].get<double>(), prefill,
        prefill_gflop, peak, of_peak);
  }
  std::fflush(stdout);
}

}  // namespace

void add_bench_roofline_subcommand(CLI::App& bench, int& exit_code) {
  auto args = std::make_shared<RooflineArgs>();
  auto& c = args->config;
  auto* r = bench.add_subcommand(
      "roofline",
      "read bandwidth, bytes per decode step, roofline tok/s and the achieved fraction; prefill "
      "tok/s and its fraction of peak FMA throughput");
  r->add_option("-m,--model", c.model_path, "GGUF model")->required();
  r->add_option("-t,--threads", args->threads, "thread counts, e.g. 1,2 (default: 1..all)");
  r->add_option("--ctx", c.ctx, "mean context of the timed decode steps")->capture_default_str();
  r->add_option("--n-gen", c.n_gen, "tokens generated per decode run")->capture_default_str();
  r->add_option("--repeats", c.repeats, "measured decode runs per thread count")
      ->capture_default_str();
  r->add_option("--warmup", c.warmup, "unmeasured decode runs per thread count")
      ->capture_default_str();
  r->add_option("--bandwidth-mib", c.bandwidth_mib, "DRAM-regime buffer (several times the L3)")
      ->capture_default_str();
  r->add_option("--bandwidth-repeats", c.bandwidth_repeats, "bandwidth samples per point")
      ->capture_default_str();
  r->add_option("--prefill", c.prefill_tokens,
                "filler tokens per timed prefill, checked against peak FMA throughput (0: off)")
      ->capture_default_str();
  r->add_option("--peak-repeats", c.peak_repeats, "peak FMA samples per thread count")
      ->capture_default_str();
  r->add_option("--l3-mib", args->l3_mib, "L3 size override (default: from sysfs; 0: none)");
  r->add_option("--seed", c.seed, "sampler seed (greedy: unused by the draw)")
      ->capture_default_str();
  r->add_option("--out", args->out, "report JSON path");
  r->add_flag("-q,--quiet", args->quiet, "no progress on stderr");
  r->callback([args, &exit_code] {
    for (int64_t t :
         args->threads.empty() ? std::vector<int64_t>{} : parse_list(args->threads, "--threads")) {
      args->config.threads.push_back(static_cast<int>(t));
    }
    if (args->l3_mib >= 0) args->config.l3_bytes = args->l3_mib * (int64_t{1} << 20);
    ProgressBar bar(args->quiet);
    const json report = bench::run_roofline(args->config, std::ref(bar));
    print_table(report);
    exit_code = gate_and_write(report, args->out);
  });
}

}  // namespace augur::cli
