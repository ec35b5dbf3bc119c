#include "kernels/peak_flops.h"

#include <chrono>

#include "common/error.h"
#include "kernels/isa.h"

namespace augur::kernels {
namespace {

// Four floats in one SSE register (baseline x86-64 has SSE2 but no FMA).
using Float4 = float __attribute__((vector_size(16)));

// The portable path: 12 chains of a multiply then an add (each counted as one FMA). A chain's
// step waits for two latencies, so 12 chains keep both the multiply and the add ports busy.
int64_t fma_chains_portable(int64_t n_fmas, float* sink) {
  constexpr int64_t kFmasPerTrip = 12 * 4;
  const int64_t trips = (n_fmas + kFmasPerTrip - 1) / kFmasPerTrip;
  const Float4 half = {0.5f, 0.5f, 0.5f, 0.5f}, one = {1.0f, 1.0f, 1.0f, 1.0f};
  // Distinct starting values, or the compiler merges the identical chains into one.
  Float4 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = Float4{} + static_cast<float>(i);
  for (int64_t trip = 0; trip < trips; ++trip) {
#pragma GCC unroll 12
    for (auto& a : acc) a = a * half + one;
  }
  Float4 all = {};
  for (const auto& a : acc) all += a;
  *sink = (all[0] + all[1]) + (all[2] + all[3]);
  return trips * kFmasPerTrip;
}

}  // namespace

int64_t fma_chains(int64_t n_fmas, float* sink) {
  if (runs_avx2_kernels(current_isa())) return detail::fma_chains_avx2(n_fmas, sink);
  return fma_chains_portable(n_fmas, sink);
}

std::vector<double> measure_parallel_rate(ThreadPool& pool, int repeats, int64_t per_thread,
                                          double ops_per_unit,
                                          const std::function<int64_t(int64_t)>& run) {
  AUGUR_CHECK(repeats >= 1 && per_thread >= 1, "at least one sample of at least one unit");
  const int n_threads = pool.size();
  std::vector<int64_t> done(static_cast<size_t>(n_threads));  // [n_threads]
  // One chunk per thread: parallel_for gives each of pool.size() chunks its own thread.
  auto all = [&] {
    pool.parallel_for(n_threads, [&](int64_t begin, int64_t end) {
      for (int64_t thread = begin; thread < end; ++thread) {
        done[static_cast<size_t>(thread)] = run(per_thread);
      }
    });
    int64_t total = 0;
    for (int64_t units : done) total += units;
    return total;
  };
  all();  // untimed
  std::vector<double> rates;
  for (int sample = 0; sample < repeats; ++sample) {
    const auto start = std::chrono::steady_clock::now();
    const int64_t units = all();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(ops_per_unit * static_cast<double>(units) / s / 1e9);
  }
  return rates;
}

std::vector<double> measure_peak_gflop_s(ThreadPool& pool, int repeats, int64_t fmas_per_thread) {
  return measure_parallel_rate(pool, repeats, fmas_per_thread, kFlopsPerFma, [](int64_t n) {
    float sink = 0;
    const int64_t ran = fma_chains(n, &sink);
    // The sum is observable, so the chains cannot be dropped.
    asm volatile("" : : "r"(sink));
    return ran;
  });
}

}  // namespace augur::kernels
