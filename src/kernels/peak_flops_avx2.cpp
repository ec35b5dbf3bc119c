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
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,
         a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  for (int64_t trip = 0; trip < trips; ++trip) {
    a0 = _mm256_fmadd_ps(a0, half, one);
    a1 = _mm256_fmadd_ps(a1, half, one);
    a2 = _mm256_fmadd_ps(a2, half, one);
    a3 = _mm256_fmadd_ps(a3, half, one);
    a4 = _mm256_fmadd_ps(a4, half, one);
    a5 = _mm256_fmadd_ps(a5, half, one);
    a6 = _mm256_fmadd_ps(a6, half, one);
    a7 = _mm256_fmadd_ps(a7, half, one);
    a8 = _mm256_fmadd_ps(a8, half, one);
    a9 = _mm256_fmadd_ps(a9, half, one);
    a10 = _mm256_fmadd_ps(a10, half, one);
    a11 = _mm256_fmadd_ps(a11, half, one);
  }
  const __m256 all =
      _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                  _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7))),
                    _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
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
