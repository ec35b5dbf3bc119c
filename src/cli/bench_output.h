// What every `augur bench` subcommand does with a fresh report: show progress while it is made,
// run the evidence gate on it, write it (and its charts) only when it passes.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace augur::cli {

// A progress bar on stderr: redrawn in place on a terminal, a line per 10 % otherwise.
class ProgressBar {
 public:
  explicit ProgressBar(bool quiet);
  void operator()(size_t done, size_t total, const std::string& what);

 private:
  bool quiet_, tty_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void write_json(const nlohmann::json& report, const std::string& path);

// Runs the gate on a fresh report; writes it to `out` (and charts into svg_dir) when clean, else
// keeps it as out + ".rejected.json" and returns kExitEvidenceViolation with the violations on
// stderr (saying so when an older file at `out` is left in place).
int gate_and_write(const nlohmann::json& report, const std::string& out,
                   const std::string& svg_dir = "");

// Whole numbers from a comma-separated list ("256,1024"); InvalidArgument names `option` and the
// item that is not one.
std::vector<int64_t> parse_list(const std::string& text, const std::string& option);

}  // namespace augur::cli
