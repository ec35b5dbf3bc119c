// For test runs pinned to one kernel path by AUGUR_ISA (CTest's isa_scalar:, isa_avx2:,
// isa_avx512:, isa_amx: runs, registered on every build machine): a test skips, naming the path,
// when this CPU cannot run it, rather than failing on its first kernel call or passing without
// having run. An unknown AUGUR_ISA value is not skipped: the kernels' InvalidArgument fails the
// test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/isa.h"

namespace augur::testing {

// The AUGUR_ISA value of this process when it names a path this CPU cannot run, else empty.
inline std::string unavailable_requested_isa() {
  const char* requested = std::getenv("AUGUR_ISA");
  if (requested == nullptr) return {};
  for (kernels::Isa isa : kernels::all_isas()) {
    if (kernels::isa_name(isa) == requested && !kernels::cpu_supports(isa)) return requested;
  }
  return {};
}

}  // namespace augur::testing

// In a test body or SetUp.
#define AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE()                                      \
  do {                                                                                 \
    const std::string unavailable_isa = ::augur::testing::unavailable_requested_isa(); \
    if (!unavailable_isa.empty()) {                                                    \
      GTEST_SKIP() << "AUGUR_ISA=" << unavailable_isa << ": this CPU cannot run the "  \
                   << unavailable_isa << " kernel path";                               \
    }                                                                                  \
  } while (0)
