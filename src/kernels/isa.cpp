#include "kernels/isa.h"

#include <fmt/format.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cstdlib>
#include <string>

#include "common/error.h"

namespace augur::kernels {
namespace {

constexpr int kUnresolved = -1;
std::atomic<int> g_isa{kUnresolved};

std::string allowed_list() {
  std::string out;
  for (Isa isa : supported_isas()) {
    if (!out.empty()) out += ", ";
    out += isa_name(isa);
  }
  return out;
}

#if defined(__x86_64__) || defined(__i386__)
// F16C from cpuid leaf 1 (ECX bit 29): __builtin_cpu_supports("f16c") is gcc's, clang 14 lacks it.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}

// AVX512F/BW/VL/DQ/VNNI from cpuid leaf 7, and XCR0 saying the OS saves the SSE, AVX, opmask and
// both halves of the ZMM state (bits 1, 2, 5, 6, 7): without the latter the instructions fault.
bool cpu_has_avx512_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  if (!(ecx & bit_OSXSAVE)) return false;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const unsigned need_ebx = bit_AVX512F | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL;
  if ((ebx & need_ebx) != need_ebx || !(ecx & bit_AVX512VNNI)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  asm volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  constexpr unsigned kZmmState = 0xE6;
  return (xcr0_lo & kZmmState) == kZmmState;
}

// AMX-TILE and AMX-INT8 (cpuid leaf 7, EDX bits 24 and 25) and XCR0 saying the OS manages the
// tile configuration and tile data (bits 17 and 18).
bool cpu_has_amx_int8() {
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  constexpr unsigned kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;
  if ((edx & (kAmxTile | kAmxInt8)) != (kAmxTile | kAmxInt8)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  asm volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  constexpr unsigned kTileState = (1u << 17) | (1u << 18);
  return (xcr0_lo & kTileState) == kTileState;
}

// Linux hands out the (8 KB) tile data state only to processes that ask for it; until then the
// first tile instruction faults. The permission is per process and asked for once; a kernel
// without the call (before 5.16) or one that refuses it leaves the path unavailable.
bool amx_permitted() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool granted = [] {
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
#else
  return false;
#endif
}
#endif

}  // namespace

std::vector<Isa> all_isas() {
  return {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx};
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
  }
  return "unknown";
}

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2:
#if defined(__x86_64__) || defined(__i386__)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c() &&
             __builtin_cpu_supports("bmi2");
#else
      return false;
#endif
    case Isa::kAvx512:
#if defined(__x86_64__) || defined(__i386__)
      return cpu_supports(Isa::kAvx2) && cpu_has_avx512_vnni();
#else
      return false;
#endif
    case Isa::kAmx:
#if defined(__x86_64__)
      return cpu_supports(Isa::kAvx512) && cpu_has_amx_int8() && amx_permitted();
#else
      return false;
#endif
  }
  return false;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : all_isas()) {
    if (cpu_supports(isa)) out.push_back(isa);
  }
  return out;
}

Isa select_isa(const char* requested) {
  if (requested == nullptr || *requested == '\0') return supported_isas().back();
  const std::string_view value = requested;
  for (Isa isa : all_isas()) {
    if (value != isa_name(isa)) continue;
    if (!cpu_supports(isa)) {
      throw InvalidArgument(fmt::format("AUGUR_ISA={}: this CPU does not support it (allowed: {})",
                                        value, allowed_list()));
    }
    return isa;
  }
  throw InvalidArgument(
      fmt::format("AUGUR_ISA={}: unknown kernel path (allowed: {})", value, allowed_list()));
}

Isa current_isa() {
  const int isa = g_isa.load(std::memory_order_relaxed);
  if (isa != kUnresolved) return static_cast<Isa>(isa);
  const Isa chosen = select_isa(std::getenv("AUGUR_ISA"));
  g_isa.store(static_cast<int>(chosen), std::memory_order_relaxed);
  return chosen;
}

std::string_view active_isa() {
  return isa_name(current_isa());
}

void set_isa_for_testing(Isa isa) {
  if (!cpu_supports(isa)) {
    throw InvalidArgument(fmt::format("kernel path {}: this CPU does not support it (allowed: {})",
                                      isa_name(isa), allowed_list()));
  }
  g_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
}

}  // namespace augur::kernels
