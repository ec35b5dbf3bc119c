// The AVX2 + FMA chains of peak_flops.h. Compiled with AVX2 flags and only called when the CPU has
// them; nothing here is inline or shared with other files (docs/kernels.md, "ODR hazard").
#include <immintrin.h>

#include "kernels/peak_flops.h"

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)

int64_t fma_chains_avx2(int64_t n_fmas, float* sink) {
  // 12 chains x 8 lanes: FMA latency (4-5 cycles) x 2 FMA ports needs 8-10 chains in flight; 12
  // accumulators plus the two constants still fit the 16 ymm registers, so nothing spills.
  constexpr int64_t kFmasPerTrip = 12 * 8;
  const int64_t trips = (n_fmas + kFmasPerTrip - 1) / kFmasPerTrip;
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  // Distinct starting values: twelve identical chains would be merged into one by the compiler
  // (it did, and the "peak" was then one chain's latency-bound rate times twelve).
  __m256 acc[12];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (int64_t trip = 0; trip < trips; ++trip) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm256_fmadd_ps(a, half, one);
  }
  __m256 all = _mm256_setzero_ps();
#pragma GCC unroll 12
  for (const auto& a : acc) all = _mm256_add_ps(all, a);
  float lanes[8];
  _mm256_storeu_ps(lanes, all);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  *sink = sum;
  return trips * kFmasPerTrip;
}

#else

int64_t fma_chains_avx2(int64_t, float*) {
  __builtin_trap();  // never dispatched: cpu_supports(kAvx2) is false off x86
}

#endif

}  // namespace augur::kernels::detail
