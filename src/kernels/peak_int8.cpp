#include "kernels/peak_int8.h"

#include <fmt/format.h>

#include <chrono>

#include "common/error.h"

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
  AUGUR_CHECK(repeats >= 1 && macs_per_thread >= 1, "at least one sample of at least one MAC");
  const int n_threads = pool.size();
  std::vector<int64_t> macs_done(static_cast<size_t>(n_threads));  // [n_threads]
  std::vector<int32_t> sinks(static_cast<size_t>(n_threads));      // [n_threads]
  auto run = [&] {
    pool.parallel_for(n_threads, [&](int64_t begin, int64_t end) {
      for (int64_t thread = begin; thread < end; ++thread) {
        const auto at = static_cast<size_t>(thread);
        macs_done[at] = int8_mac_chains(macs_per_thread, &sinks[at]);
      }
    });
    int64_t total = 0;
    for (int64_t macs : macs_done) total += macs;
    return total;
  };
  run();  // untimed
  std::vector<double> gop_s;
  for (int sample = 0; sample < repeats; ++sample) {
    const auto start = std::chrono::steady_clock::now();
    const int64_t macs = run();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    gop_s.push_back(kOpsPerMac * static_cast<double>(macs) / s / 1e9);
  }
  return gop_s;
}

}  // namespace augur::kernels
