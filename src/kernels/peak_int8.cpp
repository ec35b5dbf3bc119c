#include "kernels/peak_int8.h"

#include <fmt/format.h>

#include "common/error.h"
#include "kernels/peak_flops.h"

namespace augur::kernels {

bool has_int8_peak(Isa isa) {
  return isa == Isa::kAvx512 || isa == Isa::kAmx;
}

int64_t int8_mac_chains(int64_t n_macs, int32_t* sink) {
  if (!has_int8_peak(current_isa())) {
    throw Unsupported(fmt::format("the int8 peak needs AVX-512 VNNI; the {} path has none",
                                  isa_name(current_isa())));
  }
  return detail::int8_mac_chains_avx512(n_macs, sink);
}

std::vector<double> measure_peak_int8_gop_s(ThreadPool& pool, int repeats,
                                            int64_t macs_per_thread) {
  return measure_parallel_rate(pool, repeats, macs_per_thread, kOpsPerMac, [](int64_t n) {
    int32_t sink = 0;
    const int64_t ran = int8_mac_chains(n, &sink);
    asm volatile("" : : "r"(sink));
    return ran;
  });
}

}  // namespace augur::kernels
