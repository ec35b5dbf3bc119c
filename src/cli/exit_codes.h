// The exit codes of every augur subcommand, as README.md ("Exit codes") promises them. Commands
// return these; main maps errors to them. No other number leaves the process (CLI11's own
// 105..115 included: a parse error is an invalid argument).
#pragma once

namespace augur::cli {

inline constexpr int kExitOk = 0;
// A file that cannot be read or is malformed (model, prompt file, benchmark report), an output
// that cannot be written, or any other runtime failure.
inline constexpr int kExitError = 1;
// An option or argument that is unknown, missing, not a number, out of range or inconsistent
// with another one.
inline constexpr int kExitInvalidArgument = 2;
// Valid input this build cannot run: architecture, tensor type, option combination.
inline constexpr int kExitUnsupported = 3;
// `augur bench ...`: the report breaks an evidence rule (docs/bench-report.md).
inline constexpr int kExitEvidenceViolation = 4;
// Stopped by Ctrl-C (128 + SIGINT).
inline constexpr int kExitInterrupted = 130;

}  // namespace augur::cli
