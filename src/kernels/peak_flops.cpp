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

std::vector<double> measure_peak_gflop_s(ThreadPool& pool, int repeats, int64_t fmas_per_thread) {
  AUGUR_CHECK(repeats >= 1 && fmas_per_thread >= 1, "at least one sample of at least one FMA");
  const int n_threads = pool.size();
  std::vector<int64_t> fmas_done(static_cast<size_t>(n_threads));  // [n_threads]
  std::vector<float> sinks(static_cast<size_t>(n_threads));        // [n_threads]
  // One chunk per thread: parallel_for gives each of pool.size() chunks its own thread.
  auto run = [&] {
    pool.parallel_for(n_threads, [&](int64_t begin, int64_t end) {
      for (int64_t thread = begin; thread < end; ++thread) {
        const auto at = static_cast<size_t>(thread);
        fmas_done[at] = fma_chains(fmas_per_thread, &sinks[at]);
      }
    });
    int64_t total = 0;
    for (int64_t fmas : fmas_done) total += fmas;
    return total;
  };
  run();  // untimed
  std::vector<double> gflop_s;
  for (int sample = 0; sample < repeats; ++sample) {
    const auto start = std::chrono::steady_clock::now();
    const int64_t fmas = run();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    gflop_s.push_back(kFlopsPerFma * static_cast<double>(fmas) / s / 1e9);
  }
  return gflop_s;
}

}  // namespace augur::kernels
