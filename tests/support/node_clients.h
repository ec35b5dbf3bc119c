// The Node.js side of the server tests: the scripts in tests/server/clients (TypeScript, compiled
// with tsc --strict against the pinned npm packages) and how a test runs them. Node and the
// node_modules are installed by scripts/install-deps.sh; a test without them fails and says so
// (a skip would hide a broken setup). AUGUR_SKIP_NODE_TESTS=1 skips these tests.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "support/run_command.h"
#include "test_paths.h"

namespace augur::testing {

inline std::filesystem::path node_clients_dir() {
  return source_dir() / "tests" / "server" / "clients";
}

inline bool node_tests_skipped() {
  const char* env = std::getenv("AUGUR_SKIP_NODE_TESTS");
  return env && std::string(env) == "1";
}

// What is missing for the node tests, or nothing: node on PATH, and every package of
// package.json in node_modules at the version package.json pins.
inline std::optional<std::string> node_setup_problem() {
  if (run_command("command -v node").exit_code != 0) return "node is not on PATH";
  const auto dir = node_clients_dir();
  const auto manifest = nlohmann::json::parse(slurp(dir / "package.json"));
  for (const auto& [name, version] : manifest.at("dependencies").items()) {
    const auto installed = dir / "node_modules" / name / "package.json";
    if (!std::filesystem::exists(installed)) {
      return "npm package " + name + " is not installed in " + (dir / "node_modules").string();
    }
    const auto found = nlohmann::json::parse(slurp(installed)).value("version", "");
    if (found != version.get<std::string>()) {
      return "npm package " + name + " is " + found + ", package.json pins " +
             version.get<std::string>();
    }
  }
  return std::nullopt;
}

// Compiles the client scripts (tsc -p tests/server/clients) into the build tree once, under a
// file lock so that tests running in parallel share one compile; recompiles when a source is
// newer than the last compile. Returns the output folder; tsc's errors fail the test.
inline std::filesystem::path compiled_node_clients() {
  namespace fs = std::filesystem;
  const auto src = node_clients_dir();
  const auto out = augur_bin().parent_path().parent_path() / "server-clients";
  fs::create_directories(out);
  const int lock = ::open((out / ".lock").c_str(), O_RDWR | O_CREAT, 0644);
  ::flock(lock, LOCK_EX);
  const auto stamp = out / ".compiled";
  bool stale = !fs::exists(stamp);
  for (const auto& entry : fs::directory_iterator(src)) {
    const auto ext = entry.path().extension();
    if (!stale && (ext == ".ts" || ext == ".json")) {
      stale = entry.last_write_time() > fs::last_write_time(stamp);
    }
  }
  CommandResult tsc{0, "", ""};
  if (stale) {
    tsc = run_command("node " + quote(src / "node_modules/typescript/bin/tsc") + " -p " +
                      quote(src) + " --outDir " + quote(out));
    if (tsc.exit_code == 0) {
      fs::remove(stamp);
      ::close(::open(stamp.c_str(), O_WRONLY | O_CREAT, 0644));
    }
  }
  ::flock(lock, LOCK_UN);
  ::close(lock);
  if (tsc.exit_code != 0) {
    throw std::runtime_error("tsc failed on tests/server/clients:\n" + tsc.out + tsc.err);
  }
  return out;
}

// `node SCRIPT ARGS` with the clients' node_modules on the module path.
inline CommandResult run_node_client(const std::string& script, const std::string& args) {
  const auto js = compiled_node_clients() / script;
  return run_command("NODE_PATH=" + quote(node_clients_dir() / "node_modules") + " node " +
                     quote(js) + " " + args);
}

}  // namespace augur::testing

// Skips the test when AUGUR_SKIP_NODE_TESTS=1; otherwise fails it when node or its packages are
// missing (CI installs them). A macro because GTEST_SKIP and FAIL return from the test body.
#define AUGUR_REQUIRE_NODE_CLIENTS()                                                          \
  do {                                                                                        \
    if (::augur::testing::node_tests_skipped()) {                                             \
      GTEST_SKIP() << "AUGUR_SKIP_NODE_TESTS=1: the node client tests are skipped";           \
    }                                                                                         \
    if (const auto problem = ::augur::testing::node_setup_problem()) {                        \
      FAIL() << *problem << ": run scripts/install-deps.sh (or set AUGUR_SKIP_NODE_TESTS=1)"; \
    }                                                                                         \
  } while (0)
