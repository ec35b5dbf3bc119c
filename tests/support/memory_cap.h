// Runs a piece of code with its address space capped, to show it fails early and in bounded
// memory: in a forked child with RLIMIT_AS set to what the process maps now plus a headroom, so a
// large allocation ends in std::bad_alloc (which the outcome reports) instead of paging the
// machine. Sanitizer builds reserve terabytes of shadow memory, which no cap leaves room for:
// there the child runs uncapped (the outcome's text still pins what happened).
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <new>
#include <string>

#include "support/sanitized_build.h"

namespace augur::testing {

inline constexpr bool kMemoryCapWorks = !kSanitizedBuild;

// What the process maps now (VmSize), in bytes.
inline size_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

struct CappedOutcome {
  bool finished = false;  // the child reported back (it did not crash)
  std::string text;       // what `body` returned, or "std::bad_alloc", or "exception: <what>"
};

// Runs `body` in a child whose address space may grow by at most `headroom_bytes`.
inline CappedOutcome run_with_memory_cap(size_t headroom_bytes,
                                         const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return {false, "pipe failed"};
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return {false, "fork failed"};
  if (pid == 0) {
    ::close(fds[0]);
    if (kMemoryCapWorks) {
      const rlim_t cap = mapped_bytes() + headroom_bytes;
      const rlimit limit{cap, cap};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    std::string text;
    try {
      text = body();
    } catch (const std::bad_alloc&) {
      text = "std::bad_alloc";
    } catch (const std::exception& e) {
      text = std::string("exception: ") + e.what();
    }
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  CappedOutcome out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) out.text.append(buffer, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  out.finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return out;
}

// A shell prefix that caps the address space of the command after it at `bytes` (nothing under
// a sanitizer): for CLI tests of hostile files.
inline std::string shell_memory_cap(size_t bytes) {
  if (!kMemoryCapWorks) return "";
  return "ulimit -v " + std::to_string(bytes / 1024) + " && ";
}

}  // namespace augur::testing
