// Facts about this build and this machine that a benchmark report records, so a number can be
// traced to the code and the hardware that produced it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

namespace augur::bench {

// {"commit", "dirty", "compiler", "build_type", "flags"}
nlohmann::json build_info();
// {"cpu", "cores", "threads_used", "memory_bytes", "isa", "os"}
nlohmann::json machine_info(int threads_used);
// Hex SHA-256 of a file's bytes (streamed). Error if it cannot be read.
std::string sha256_file(const std::filesystem::path& path);
// Hex SHA-256 of bytes in memory.
std::string sha256_bytes(std::span<const uint8_t> bytes);
// The process's peak resident set size in bytes: since the last successful reset_peak_rss()
// (VmHWM of /proc/self/status), or over its lifetime (getrusage) where Linux lacks the reset.
int64_t peak_rss_bytes();
// Resets the high-water mark to the current resident set (writes 5 to /proc/self/clear_refs);
// false where the kernel does not allow it.
bool reset_peak_rss();
// How a report names a file: relative to the working directory when it lies below it (run from
// the repository root, that is relative to the repository), else by its file name alone (the
// report's sha256 identifies it); never by a machine's absolute path.
std::string report_path(const std::filesystem::path& path);
// UTC now, ISO 8601 ("2026-12-02T22:30:00Z").
std::string utc_timestamp();

}  // namespace augur::bench
