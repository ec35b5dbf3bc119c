#include "kernels/isa.h"

#include <fmt/format.h>

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

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
  }
  return "unknown";
}

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2:
#if defined(__x86_64__) || defined(__i386__)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
#else
      return false;
#endif
  }
  return false;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (cpu_supports(isa)) out.push_back(isa);
  }
  return out;
}

Isa select_isa(const char* requested) {
  if (requested == nullptr || *requested == '\0') return supported_isas().back();
  const std::string_view value = requested;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
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
