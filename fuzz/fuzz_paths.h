// Where the fuzz targets find the real files they start from: the team's shared fixtures
// (AUGUR_SHARED overrides the configured directory, as for the tests) and this source tree.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace augur::fuzz {

inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("AUGUR_SHARED"); env && *env) return env;
  return AUGUR_SHARED_DIR;
}

inline std::filesystem::path source_dir() {
  return AUGUR_SOURCE_DIR;
}

}  // namespace augur::fuzz
