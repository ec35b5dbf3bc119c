// Facts about this build and this machine that a benchmark report records, so a number can be
// traced to the code and the hardware that produced it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace augur::bench {

// {"commit", "dirty", "compiler", "build_type", "flags"}
nlohmann::json build_info();
// {"cpu", "cores", "threads_used", "memory_bytes", "isa", "os"}
nlohmann::json machine_info(int threads_used);
// Hex SHA-256 of a file's bytes (streamed). Error if it cannot be read.
std::string sha256_file(const std::filesystem::path& path);
// The process's peak resident set size so far, in bytes (getrusage).
int64_t peak_rss_bytes();
// UTC now, ISO 8601 ("2026-12-02T22:30:00Z").
std::string utc_timestamp();

}  // namespace augur::bench
