// Small helpers of the x86 kernel files (*_avx2.cpp, *_avx512.cpp, *_amx.cpp). Everything here has
// internal linkage (an anonymous namespace), so each including file compiles its own copy with
// its own ISA flags and no copy can stand in for another at link time (docs/kernels.md, "ODR
// hazard"). Needs nothing beyond AVX2 + F16C.
#pragma once

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstdint>

// Decoders must melt into the tile loops so their results stay in registers.
#ifndef AUGUR_ALWAYS_INLINE
#define AUGUR_ALWAYS_INLINE inline __attribute__((always_inline))
#endif

namespace augur::kernels::detail {
namespace {

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return v;
}

inline float half_to_float(const uint8_t* p) {
  return _cvtsh_ss(load_u16(p));
}

// Weights are read once per step from a matrix far larger than L2, in row blocks that advance
// together through contiguous memory; asking for the bytes 8 KB ahead keeps the hardware
// prefetcher's stream ahead of the kernel (measured +25 % decode on zoo q8_0, 2 threads; 1-4 KB
// ahead gain less).
AUGUR_ALWAYS_INLINE void prefetch_ahead(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + 8192, _MM_HINT_T0);
}

// The final sum of eight float lanes, in ggml's hsum_float_8 order.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace
}  // namespace augur::kernels::detail

#endif
