#include "cli/bench_output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "bench/evidence_gate.h"
#include "bench/svg_charts.h"
#include "cli/exit_codes.h"
#include "common/error.h"

namespace augur::cli {

using nlohmann::json;

ProgressBar::ProgressBar(bool quiet) : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0) {}

void ProgressBar::operator()(size_t done, size_t total, const std::string& what) {
  if (quiet_ || total == 0) return;
  const double frac = static_cast<double>(done) / static_cast<double>(total);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done > 0 ? elapsed * (1.0 - frac) / frac : 0.0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  const std::string bar = std::string(static_cast<size_t>(filled), '#') +
                          std::string(static_cast<size_t>(kWidth - filled), '.');
  const std::string line = fmt::format("[{}] {}/{} {:<32} elapsed {:.0f}s eta {:.0f}s", bar, done,
                                       total, what.substr(0, 32), elapsed, eta);
  if (tty_) {
    std::fprintf(stderr, "\r%s", line.c_str());
    if (done == total) std::fprintf(stderr, "\n");
  } else if (static_cast<int>(frac * 10) != last_decile_ || done == total) {
    last_decile_ = static_cast<int>(frac * 10);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void write_json(const json& report, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("cannot write {}", path));
  out << report.dump(1) << "\n";
  if (!out) throw Error(fmt::format("writing {} failed", path));
}

int gate_and_write(const json& report, const std::string& out, const std::string& svg_dir) {
  const auto violations = bench::check_report(report);
  if (!violations.empty()) {
    const std::string rejected = out.empty() ? "" : out + ".rejected.json";
    if (!rejected.empty()) write_json(report, rejected);
    // An older report at `out` stays (a failed run deletes nothing), but must not pass for this
    // one.
    const std::string stale =
        !out.empty() && std::filesystem::exists(out)
            ? fmt::format("; {} was not written: the file there is from an earlier run", out)
            : "";
    std::fprintf(stderr, "augur: the report fails the evidence gate%s%s:\n%s",
                 rejected.empty() ? "" : fmt::format(" (kept as {})", rejected).c_str(),
                 stale.c_str(), bench::format_violations(violations).c_str());
    return kExitEvidenceViolation;
  }
  if (!out.empty()) write_json(report, out);
  if (!svg_dir.empty()) {
    for (const auto& file : bench::write_report_charts(report, svg_dir)) {
      std::fprintf(stderr, "wrote %s\n", file.c_str());
    }
  }
  return kExitOk;
}

std::vector<int64_t> parse_list(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      size_t used = 0;
      out.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw InvalidArgument(fmt::format("{}: '{}' is not a whole number", option, item));
    }
  }
  return out;
}

}  // namespace augur::cli
