// Where tests find the shared fixtures, the source tree and the CLI binary.
// AUGUR_SHARED overrides the configured shared/ location at run time.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace augur::testing {

inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("AUGUR_SHARED")) return env;
  return AUGUR_SHARED_DIR;
}
inline std::filesystem::path fixtures_dir() {
  return shared_dir() / "fixtures";
}
inline std::filesystem::path models_dir() {
  return shared_dir() / "models";
}
inline std::filesystem::path source_dir() {
  return AUGUR_SOURCE_DIR;
}
inline std::filesystem::path augur_bin() {
  return AUGUR_BIN;
}

}  // namespace augur::testing
