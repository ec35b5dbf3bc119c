// Runs a shell command line for CLI tests, capturing stdout, stderr and the exit status.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace augur::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::filesystem::path temp_path(const std::string& stem) {
  static int counter = 0;
  return std::filesystem::temp_directory_path() / ("augur-test-" + std::to_string(::getpid()) +
                                                   "-" + std::to_string(counter++) + "-" + stem);
}

inline CommandResult run_command(const std::string& command_line) {
  const auto out_path = temp_path("stdout"), err_path = temp_path("stderr");
  const std::string full =
      command_line + " >" + out_path.string() + " 2>" + err_path.string() + " </dev/null";
  const int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return r;
}

inline std::string quote(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

}  // namespace augur::testing
