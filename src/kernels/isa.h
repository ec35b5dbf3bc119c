// Which instruction-set path the kernels run: chosen once from what the CPU reports, overridable
// with the environment variable AUGUR_ISA=scalar|avx2|avx512|amx (for comparisons and bug hunts)
// and, in tests, with set_isa_for_testing. Kernels for one ISA live in files named *_<isa>.cpp, the
// only files compiled with that ISA's flags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace augur::kernels {

// Each path includes the one before it: kAvx512 runs its own matmul kernels for Q8_0/Q4_0 (integer)
// and F32/F16/BF16 (float) weights and the AVX2 kernels for everything else; kAmx runs AMX-INT8
// tiles for Q8_0/Q4_0 weights at the batch sizes where they beat AVX-512 (matmul_amx.cpp) and the
// kAvx512 kernels otherwise.
enum class Isa { kScalar, kAvx2, kAvx512, kAmx };

// Every path augur knows, whether or not this CPU can run it, in order of preference (best last).
std::vector<Isa> all_isas();

std::string_view isa_name(Isa isa);
// Whether this CPU can run `isa`: AVX2 needs AVX2, FMA, F16C and BMI2; AVX-512 needs those plus
// AVX512F/BW/VL/DQ/VNNI (cpuid) and an OS that saves the opmask and ZMM registers (xgetbv); AMX
// needs the AVX-512 path plus AMX-TILE and AMX-INT8 (cpuid), XCR0's tile bits, and Linux's
// permission for tile data (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), requested once
// per process; a refusal makes the path unavailable).
bool cpu_supports(Isa isa);
// Whether `isa` runs the AVX2 kernels (its own, or as the fallback of a wider path).
inline bool runs_avx2_kernels(Isa isa) {
  return isa == Isa::kAvx2 || isa == Isa::kAvx512 || isa == Isa::kAmx;
}
// The ISAs this CPU can run, best last.
std::vector<Isa> supported_isas();

// The ISA for an AUGUR_ISA value: null or empty picks the best this CPU supports. Throws
// InvalidArgument naming the value and what this CPU allows when it is unknown or unavailable.
Isa select_isa(const char* requested);

// The ISA the kernels use: set_isa_for_testing's choice, else select_isa(getenv("AUGUR_ISA"))
// resolved on first use (an invalid value throws on every call until fixed).
Isa current_isa();
// Name of the kernel path in use ("scalar", "avx2", "avx512" or "amx").
std::string_view active_isa();

// Forces a path (throws InvalidArgument when the CPU cannot run it). Not for concurrent use with
// running kernels; tests only.
void set_isa_for_testing(Isa isa);

}  // namespace augur::kernels
