#include "common/error.h"

#include <cstdio>
#include <cstdlib>

namespace augur {

void check_failed(const char* cond, const char* why, const char* file, int line) {
  std::fprintf(stderr, "augur: internal check failed at %s:%d: %s (%s)\n", file, line, cond, why);
  std::abort();
}

}  // namespace augur
