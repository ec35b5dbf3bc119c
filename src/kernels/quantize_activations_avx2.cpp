// AVX2 Q8_0 activation quantization, operation for operation as ggml-cpu's x86 quantize_row_q8_0
// (max of |x| over the block, fp16 scale amax / 127, codes x * (127 / amax) rounded half to even).
// Compiled with AVX2 flags; file-local helpers only (docs/kernels.md, "ODR hazard").
#include <immintrin.h>

#include <cstdint>

namespace augur::kernels::detail {

#if defined(__x86_64__) || defined(__i386__)

void quantize_rows_q8_0_avx2(const float* x, int64_t rows, int64_t cols, int8_t* qs, float* d) {
  const int64_t blocks = rows * (cols / 32);
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* p = x + 32 * b;
    // Unrolled so that v and q stay in registers: rolled, GCC 12 at -O2 kept them on the stack,
    // stored in 16-byte halves and reloaded whole, a failed store forwarding per register
    // (1.25 ns a value, against 0.19 unrolled, bit for bit the same).
    __m256 v[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(p + 8 * k);
    __m256 max_abs = _mm256_andnot_ps(sign_bit, v[0]);
#pragma GCC unroll 4
    for (int k = 1; k < 4; ++k) max_abs = _mm256_max_ps(max_abs, _mm256_andnot_ps(sign_bit, v[k]));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(max_abs, 1), _mm256_castps256_ps128(max_abs));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    d[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i q[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      q[k] =
          _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT));
    }
    // int32 -> int16 -> int8 packs interleave 128-bit lanes; the permute restores element order.
    const __m256i q16a = _mm256_packs_epi32(q[0], q[1]), q16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b),
                                                   _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * b), q8);
  }
}

#else

void quantize_rows_q8_0_avx2(const float*, int64_t, int64_t, int8_t*, float*) {}

#endif

}  // namespace augur::kernels::detail
