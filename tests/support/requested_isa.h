// For test runs pinned to one kernel path by AUGUR_ISA (CTest's isa_scalar:, isa_avx2:,
// isa_avx512:, isa_amx: runs, registered on every build machine): a test skips, naming the path,
// when this CPU cannot run it, rather than failing on its first kernel call or passing without
// having run. An unknown AUGUR_ISA value is not skipped: the kernels' InvalidArgument fails the
// test. CTest's SIMD runs also set AUGUR_SKIP_DEFAULT_ISA=1: a path that is this CPU's default
// skips there too, since the regular run of the same tests already took it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/isa.h"

namespace augur::testing {

// Why this process skips the tests pinned to AUGUR_ISA, or empty when it runs them.
inline std::string requested_isa_skip_reason() {
  const char* requested = std::getenv("AUGUR_ISA");
  if (requested == nullptr) return {};
  const char* skip_default = std::getenv("AUGUR_SKIP_DEFAULT_ISA");
  for (kernels::Isa isa : kernels::all_isas()) {
    if (kernels::isa_name(isa) != requested) continue;
    const std::string name(requested);
    if (!kernels::cpu_supports(isa)) {
      return "AUGUR_ISA=" + name + ": this CPU cannot run the " + name + " kernel path";
    }
    if (skip_default != nullptr && std::string(skip_default) == "1" &&
        isa == kernels::select_isa(nullptr)) {
      return "AUGUR_ISA=" + name + ": the " + name +
             " path is this CPU's default, which the regular run of these tests takes";
    }
  }
  return {};
}

}  // namespace augur::testing

// In a test body or SetUp.
#define AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE()                                      \
  do {                                                                                 \
    const std::string isa_skip_reason = ::augur::testing::requested_isa_skip_reason(); \
    if (!isa_skip_reason.empty()) GTEST_SKIP() << isa_skip_reason;                     \
  } while (0)
