// Runs `augur serve` as a child process for server tests: --port 0 (the port it picked is read
// from its "listening on" line), waits until GET /health says ok, and stops it with SIGTERM
// (SIGKILL after a timeout) when the test is done. Its stderr goes to a file the test can read.
#pragma once

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/run_command.h"
#include "test_paths.h"

namespace augur::testing {

class ServeProcess {
 public:
  // args: everything after `augur serve` except --port (e.g. {"-m", path, "--parallel", "2"}).
  explicit ServeProcess(std::vector<std::string> args, bool wait_ready = true)
      : stderr_path_(temp_path("serve-stderr")) {
    args.insert(args.begin(), {augur_bin().string(), "serve", "--port", "0"});
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      const int fd = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 2);
      ::dup2(fd, 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    wait_for_port();
    if (wait_ready) wait_for_health();
  }
  ~ServeProcess() {
    stop();
    std::filesystem::remove(stderr_path_);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // The server's peak resident memory so far (VmHWM), in bytes; -1 if unknown.
  int64_t peak_rss_bytes() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
    }
    return -1;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  httplib::Client client(int read_timeout_s = 120) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(read_timeout_s, 0);
    c.set_connection_timeout(5, 0);
    return c;
  }
  std::string log() const { return slurp(stderr_path_); }
  bool running() {
    if (exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      status_ = status;
      return false;
    }
    return true;
  }
  // Sends `sig`, waits up to timeout_s for the exit, then kills. Returns the exit code
  // (128 + signal when killed); -1 if it had to be killed after the timeout.
  int stop(int sig = SIGTERM, int timeout_s = 30) {
    if (pid_ <= 0) return exit_code_;
    if (running()) ::kill(pid_, sig);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    bool killed = false;
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      exited_ = true;
      killed = true;
    }
    exit_code_ = killed ? -1 : WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
    pid_ = 0;
    return exit_code_;
  }

 private:
  void wait_for_port() {
    const std::regex listening(R"(listening on http://[^:]+:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string text = log();
      if (std::regex_search(text, m, listening)) {
        port_ = std::stoi(m[1]);
        return;
      }
      if (!running()) throw std::runtime_error("augur serve exited before listening:\n" + text);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("augur serve did not start listening:\n" + log());
  }
  void wait_for_health() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      auto c = client(5);
      if (auto res = c.Get("/health"); res && res->status == 200) return;
      if (!running()) throw std::runtime_error("augur serve exited while loading:\n" + log());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("augur serve did not become ready:\n" + log());
  }

  std::filesystem::path stderr_path_;
  pid_t pid_ = 0;
  int port_ = 0;
  bool exited_ = false;
  int status_ = 0;
  int exit_code_ = -1;
};

}  // namespace augur::testing
