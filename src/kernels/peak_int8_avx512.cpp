// The AVX-512 VNNI chains of peak_int8.h. Compiled with AVX-512 flags and only called when the CPU
// has them; nothing here is inline or shared with other files (docs/kernels.md, "ODR hazard").
// GCC 12 reports its own _mm512_undefined_*() inside _mm512_reduce_add_epi32 as uninitialized: a
// known false positive (as in matmul_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/peak_int8.h"

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)

int64_t int8_mac_chains_avx512(int64_t n_macs, int32_t* sink) {
  // 12 chains x 64 MACs: vpdpbusd's latency (5 cycles) times its ports is covered by 12
  // accumulators. Distinct starting values keep the compiler from merging identical chains.
  constexpr int64_t kMacsPerTrip = 12 * 64;
  const int64_t trips = (n_macs + kMacsPerTrip - 1) / kMacsPerTrip;
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
  __m512i acc[12];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
  for (int64_t trip = 0; trip < trips; ++trip) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm512_dpbusd_epi32(a, u, s);
  }
  __m512i all = _mm512_setzero_si512();
#pragma GCC unroll 12
  for (const auto& a : acc) all = _mm512_add_epi32(all, a);
  *sink = _mm512_reduce_add_epi32(all);
  return trips * kMacsPerTrip;
}

#else

int64_t int8_mac_chains_avx512(int64_t, int32_t*) {
  __builtin_trap();  // never dispatched: cpu_supports(kAvx512) is false off x86
}

#endif

}  // namespace augur::kernels::detail
