// `augur bench run | verify-curve | check` (and roofline, bench_roofline_command.cpp; serve,
// bench_serve_command.cpp): honest benchmarks whose reports pass the evidence gate
// (docs/bench-report.md) before they are written.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "bench/bench_run.h"
#include "bench/evidence_gate.h"
#include "bench/niah.h"
#include "bench/svg_charts.h"
#include "bench/verify_curve.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/model_loading.h"
#include "common/error.h"

namespace augur::cli {
namespace {

using nlohmann::json;

// The report at `path`, or nullopt (with the reason on stderr) when it cannot be read or is not
// JSON: that is a bad file, not a verdict of the gate, and `bench check` says so with its own
// exit code.
std::optional<json> read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read: %s\n", path.c_str(), std::strerror(errno));
    return std::nullopt;
  }
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    std::fprintf(stderr, "%s: not a JSON report: %s\n", path.c_str(), e.what());
    return std::nullopt;
  }
}

// `bench check`: every report is checked and gets a verdict line; the exit code is the worst
// verdict (a file that cannot be read means the check is incomplete, so it outranks a
// violation).
int check_reports(const std::vector<std::string>& paths) {
  bool unreadable = false, violated = false;
  for (const auto& path : paths) {
    const auto report = read_report(path);
    if (!report) {
      unreadable = true;
      continue;
    }
    const auto violations = bench::check_report(*report);
    if (violations.empty()) {
      std::printf("%s: ok\n", path.c_str());
    } else {
      violated = true;
      std::printf("%s: %zu violation(s)\n%s", path.c_str(), violations.size(),
                  bench::format_violations(violations).c_str());
    }
  }
  std::fflush(stdout);
  if (unreadable) return kExitError;
  return violated ? kExitEvidenceViolation : kExitOk;
}

void print_run_table(const json& report) {
  const auto& summary = report["summary"];
  std::map<std::string, double> speedup;
  for (const auto& s : summary["speedups"]) speedup[s["subject"]] = s["value"].get<double>();
  fmt::print("{:<22} {:>10} {:>17} {:>17} {:>6} {:>8} {:>9}\n", "arm", "decode t/s", "IQR",
             "min-max", "tau", "accept", "speedup");
  for (const auto& a : summary["arms"]) {
    const auto& d = a["decode_tok_s"];
    if (d.empty()) continue;
    const std::string name = a["name"].get<std::string>();
    fmt::print(
        "{:<22} {:>10.1f} {:>17} {:>17} {:>6} {:>8} {:>9}\n", name, d["median"].get<double>(),
        fmt::format("{:.1f}-{:.1f}", d["q1"].get<double>(), d["q3"].get<double>()),
        fmt::format("{:.1f}-{:.1f}", d["min"].get<double>(), d["max"].get<double>()),
        a["cycles"].get<int64_t>() > 0 ? fmt::format("{:.2f}", a["tau_mean"].get<double>()) : "-",
        a["drafted"].get<int64_t>() > 0
            ? fmt::format("{:.1f}%", 100 * a["accept_rate"].get<double>())
            : "-",
        speedup.contains(name) ? fmt::format("{:.2f}x", speedup[name]) : "-");
  }
  for (const auto& w : summary["withheld"]) {
    fmt::print("no claim for {}: {} ({})\n", w["arm"].get<std::string>(),
               w["reason"].get<std::string>(), w["rule"].get<std::string>());
  }
  for (const auto& e : summary["equivalence"]) {
    fmt::print("MISMATCH {} prompt {} repeat {}: first differing token {}\n",
               e["arm"].get<std::string>(), e["prompt"].get<std::string>(), e["repeat"].get<int>(),
               e["first_mismatch"].get<int64_t>());
  }
  std::fflush(stdout);
}

void print_curve_table(const json& report) {
  fmt::print("{:>6} {:>4} {:>12} {:>10}\n", "ctx", "M", "T_V median", "T_V/T_V(1)");
  for (const auto& c : report["curve"]) {
    fmt::print("{:>6} {:>4} {:>10.3f}ms {:>10.2f}\n", c["ctx"].get<int64_t>(), c["m"].get<int>(),
               1e3 * c["median_s"].get<double>(), c["ratio_to_m1"].get<double>());
  }
  for (const auto& d : report["drafters"]) {
    if (d["proposed"].get<bool>()) {
      fmt::print("drafter {:<14} ctx {:>5}: {:.3f} ms per drafted token\n",
                 d["name"].get<std::string>(), d["ctx"].get<int64_t>(),
                 1e3 * d["per_token_s"].get<double>());
    }
  }
  std::fflush(stdout);
}

struct RunArgs {
  bench::BenchRunConfig config;
  std::string arms = "ar";
  std::string cache_type_k = "f32", cache_type_v = "f32";
  std::string out, svg;
  bool quiet = false;
};

struct NiahArgs {
  bench::NiahConfig config;
  std::string contexts = "512,1024,4096", depths = "0,25,50,75,100";
  std::string cache_types = "f32,f16,q8_0,q4_0";
  std::string out;
  bool quiet = false;
};

struct CurveArgs {
  bench::VerifyCurveConfig config;
  std::string contexts = "256,1024";
  std::string layerskip;
  std::string out, svg;
  bool quiet = false;
};

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto* bench = app.add_subcommand("bench", "benchmarks with a machine-checked evidence gate");
  bench->require_subcommand(1);

  auto run = std::make_shared<RunArgs>();
  auto* r = bench->add_subcommand("run", "decode speed of each arm on each prompt (decode-only)");
  auto& rc = run->config;
  r->add_option("-m,--model", rc.target_path, "target GGUF model")->required();
  r->add_option("--model-draft", rc.draft_path, "(also -md) draft model for spec:model arms");
  r->add_option(
      "--draft-head", rc.head_path,
      "drafter head (arch eagle3 or dflash) for spec:eagle3 / spec:dflash arms and the auto "
      "source of that name");
  r->add_option("--arms", run->arms,
                "comma-separated: ar, spec:model:K, spec:eagle3:K, spec:eagle3-argmax:K, "
                "spec:dflash:K, spec:dflash-argmax:K, spec:mtp:K, spec:mtp-argmax:K, "
                "spec:ngram:K[:N], spec:layerskip:L:K, spec:auto[:SOURCES][:K]")
      ->capture_default_str();
  r->add_option("--prompts", rc.prompts_path, "JSONL file, one {\"id\",\"prompt\"} per line")
      ->required();
  r->add_option("--max-prompts", rc.max_prompts, "use only the first N prompts (0: all)");
  r->add_option("--n-gen", rc.n_gen, "tokens generated per sample")->capture_default_str();
  r->add_option("--repeats", rc.repeats, "measured repeats per arm and prompt")
      ->capture_default_str();
  r->add_option("--warmup", rc.warmup, "unmeasured warm-up rounds")->capture_default_str();
  r->add_option("--temp", rc.sampler.temperature, "temperature (0: greedy arms)");
  r->add_option("--top-k", rc.sampler.top_k, "top-k")->capture_default_str();
  r->add_option("--top-p", rc.sampler.top_p, "top-p")->capture_default_str();
  r->add_option("--min-p", rc.sampler.min_p, "min-p")->capture_default_str();
  r->add_option("--seed", rc.seed, "base seed")->capture_default_str();
  r->add_option_function<std::string>(
       "--accept",
       [&rc](const std::string& rule) {
         rc.sampled_rule = rule == "token" ? spec::SampledRule::kToken : spec::SampledRule::kBlock;
       },
       "sampled spec arms keep drafts by: block (default) or token (Leviathan-Chen); an arm's "
       "own @token or @block wins")
      ->check(CLI::IsMember({"block", "token"}))
      ->type_name("block|token")
      ->default_str("block");
  r->add_option("--policy-log", rc.policy_log_path,
                "spec:auto arms: one JSON line per cycle (source, k, predicted and actual "
                "accepted tokens and seconds), in run order");
  r->add_option("-t,--threads", rc.threads, "worker threads (default: all)");
  r->add_option("-c,--ctx-size", rc.n_ctx, "context (default: longest prompt + n-gen + K)");
  r->add_option("--ubatch", rc.ubatch, "prefill ubatch")->capture_default_str();
  r->add_option("--cache-type-k", run->cache_type_k, "K cache type: f32, f16, q8_0, q4_0")
      ->capture_default_str();
  r->add_option("--cache-type-v", run->cache_type_v, "V cache type: f32, f16, q8_0, q4_0")
      ->capture_default_str();
  r->add_option("--out", run->out, "report JSON path")->required();
  r->add_option("--svg", run->svg, "write charts into this folder");
  r->add_flag("-q,--quiet", run->quiet, "no progress bar");
  rc.sampler.temperature = 0;
  r->callback([run, &exit_code] {
    run->config.arms = bench::parse_arms(run->arms);
    run->config.cache_types = parse_cache_types(run->cache_type_k, run->cache_type_v);
    ProgressBar bar(run->quiet);
    const json report = bench::run_benchmark(run->config, std::ref(bar));
    print_run_table(report);
    exit_code = gate_and_write(report, run->out, run->svg);
  });

  auto niah = std::make_shared<NiahArgs>();
  auto* n = bench->add_subcommand("niah", "needle in a haystack: recall per cache type and depth");
  n->add_option("-m,--model", niah->config.model_path, "GGUF model")->required();
  n->add_option("--prompts", niah->config.prompts_path,
                "JSONL whose prompts, joined, are the filler")
      ->required();
  n->add_option("--ctx", niah->contexts, "context lengths")->capture_default_str();
  n->add_option("--depths", niah->depths, "needle depths in % of the filler")
      ->capture_default_str();
  n->add_option("--cache-types", niah->cache_types, "K/V cache types (both K and V)")
      ->capture_default_str();
  n->add_option("--needles", niah->config.needles, "needles per cell")->capture_default_str();
  n->add_option("-t,--threads", niah->config.threads, "worker threads (default: all)");
  n->add_option("--out", niah->out, "report JSON path")->required();
  n->add_flag("-q,--quiet", niah->quiet, "no progress bar");
  n->callback([niah, &exit_code] {
    niah->config.contexts = parse_list(niah->contexts, "--ctx");
    niah->config.depths_pct.clear();
    for (int64_t d : parse_list(niah->depths, "--depths")) {
      niah->config.depths_pct.push_back(static_cast<int>(d));
    }
    niah->config.cache_types.clear();
    std::stringstream names(niah->cache_types);
    for (std::string name; std::getline(names, name, ',');)
      niah->config.cache_types.push_back(name);
    ProgressBar bar(niah->quiet);
    const json report = bench::run_niah(niah->config, std::ref(bar));
    for (const auto& cell : report["summary"]) {
      std::printf("ctx %5lld %-5s recall %.2f  p(value) %.3f  kv %lld bytes\n",
                  static_cast<long long>(cell["context"].get<int64_t>()),
                  cell["cache_type"].get<std::string>().c_str(), cell["recall"].get<double>(),
                  cell["mean_value_prob"].get<double>(),
                  static_cast<long long>(cell["kv_bytes"].get<int64_t>()));
    }
    exit_code = gate_and_write(report, niah->out, "");
  });

  auto curve = std::make_shared<CurveArgs>();
  auto* v = bench->add_subcommand("verify-curve", "T_V(M): one target forward over M rows");
  auto& vc = curve->config;
  v->add_option("-m,--model", vc.target_path, "target GGUF model")->required();
  v->add_option("--model-draft", vc.draft_path, "(also -md) also time this draft model");
  v->add_option("--layerskip", curve->layerskip, "also time these layer-skip depths, e.g. 2,4");
  v->add_option("--max-m", vc.max_m, "largest row count M")->capture_default_str();
  v->add_option("--ctx", curve->contexts, "context lengths")->capture_default_str();
  v->add_option("--repeats", vc.repeats, "timed repeats per point")->capture_default_str();
  v->add_option("--warmup", vc.warmup, "untimed repeats per point")->capture_default_str();
  v->add_option("--draft-k", vc.draft_k, "tokens per timed drafter proposal")
      ->capture_default_str();
  v->add_option("-t,--threads", vc.threads, "worker threads (default: all)");
  v->add_option("--out", curve->out, "report JSON path")->required();
  v->add_option("--svg", curve->svg, "write the chart into this folder");
  v->add_flag("-q,--quiet", curve->quiet, "no progress bar");
  v->callback([curve, &exit_code] {
    curve->config.contexts = parse_list(curve->contexts, "--ctx");
    if (!curve->layerskip.empty()) {
      for (int64_t l : parse_list(curve->layerskip, "--layerskip")) {
        curve->config.layerskip.push_back(static_cast<int>(l));
      }
    }
    ProgressBar bar(curve->quiet);
    const json report = bench::run_verify_curve(curve->config, std::ref(bar));
    print_curve_table(report);
    exit_code = gate_and_write(report, curve->out, curve->svg);
  });

  add_bench_roofline_subcommand(*bench, exit_code);
  add_bench_serve_subcommand(*bench, exit_code);

  auto reports = std::make_shared<std::vector<std::string>>();
  auto* c = bench->add_subcommand("check", "validate reports against the evidence rules");
  c->add_option("reports", *reports, "report JSON files")->required();
  c->callback([reports, &exit_code] { exit_code = check_reports(*reports); });
}

}  // namespace augur::cli
