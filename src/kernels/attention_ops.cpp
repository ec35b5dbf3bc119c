#include "kernels/attention_ops.h"

#include <bit>
#include <cmath>

#include "kernels/isa.h"

// The portable path runs the AVX2 path's operations in the same order over fixed-size lane
// arrays, which the compiler turns into SSE2 code. Baseline x86-64 has no FMA: the exponential's
// FMAs are done in double (exact product, then a double and a float rounding: the fused result
// except in rare double-rounding cases), while the dot products' and the weighted sum's FMA
// chains become a product and a sum rounded separately. So scores of heads shorter than 128 and
// the softmax agree with the AVX2 path (and llama.cpp) in practice; the rest within rounding.
namespace augur::kernels {
namespace {

// fmaf through double: a*b is exact there, the sum is rounded twice.
inline float fma_via_double(float a, float b, float c) {
  return static_cast<float>(static_cast<double>(a) * b + c);
}

// llama.cpp's AVX-512 ggml_v_expf for x <= 0 (as exp8 in attention_ops_avx2.cpp) on kExpLanes
// values, branch-free so that the compiler vectorises it.
constexpr int kExpLanes = 16;  // also the softmax group size below

void exp_lanes(const float* __restrict x, float* __restrict out) {
  for (int lane = 0; lane < kExpLanes; ++lane) {
    const float r = 0x1.8p23f;
    const float z = fma_via_double(x[lane], 0x1.715476p+0f, r);
    const float n_raw = z - r;
    // All ones unless the result underflows (n < -160; also -inf and NaN inputs). Selections are
    // bit masks: the compiler vectorises those, not ?: on floats.
    const uint32_t keep = -static_cast<uint32_t>(n_raw >= -160.0f);
    const float n = std::bit_cast<float>((std::bit_cast<uint32_t>(n_raw) & keep) |
                                         (std::bit_cast<uint32_t>(-160.0f) & ~keep));
    const float b = fma_via_double(-n, 0x1.7f7d1cp-20f, fma_via_double(-n, 0x1.62e4p-1f, x[lane]));
    const float u = b * b;
    const float j =
        fma_via_double(fma_via_double(fma_via_double(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                      fma_via_double(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                       u, fma_via_double(0x1.ffffecp-1f, b, 1.0f));
    // j * 2^n is exact in double (2^(n+64) is a normal float); converting rounds once, as
    // vscalefps does.
    const auto pow2_n_plus_64 = std::bit_cast<float>((static_cast<int32_t>(n) + 127 + 64) << 23);
    const auto value =
        static_cast<float>(static_cast<double>(j) * static_cast<double>(pow2_n_plus_64) * 0x1p-64);
    out[lane] = std::bit_cast<float>(std::bit_cast<uint32_t>(value) & keep);
  }
}

// dot(q, key) as ggml_vec_dot_f32 on AVX-512 (see group_dot in attention_ops_avx2.cpp): lane l
// of 64 sums elements l, l+64, ...; the lanes meet as 16-lane vectors (0+2) + (1+3), then as
// _mm512_reduce_add_ps; the elements after the last whole 64-step are added one by one.
float dot_one(const float* q, const float* key, int64_t head_dim) {
  const int64_t n_steps = head_dim / 64;
  float sum = 0.0f;
  if (n_steps > 0) {
    float acc[64];
    for (int lane = 0; lane < 64; ++lane) acc[lane] = q[lane] * key[lane];
    for (int64_t d = 64; d < 64 * n_steps; d += 64) {
      for (int lane = 0; lane < 64; ++lane) acc[lane] += q[d + lane] * key[d + lane];
    }
    float x[16], t8[8], t4[4];
    for (int lane = 0; lane < 16; ++lane) {
      x[lane] = (acc[lane] + acc[32 + lane]) + (acc[16 + lane] + acc[48 + lane]);
    }
    for (int lane = 0; lane < 8; ++lane) t8[lane] = x[lane + 8] + x[lane];
    for (int lane = 0; lane < 4; ++lane) t4[lane] = t8[lane + 4] + t8[lane];
    sum = (t4[0] + t4[2]) + (t4[1] + t4[3]);
  }
  for (int64_t d = 64 * n_steps; d < head_dim; ++d) sum += q[d] * key[d];
  return sum;
}

// out[0..width) += the weighted sum of value columns d0..d0+width (width <= 64) in tinyBLAS's
// order for 16-float registers: chain r takes keys r, r+16, ..., then the sixteen chains are
// added as _mm512_reduce_add_ps adds its lanes.
void weighted_block(const float* w, const float* values, int64_t n_keys, int64_t head_dim,
                    int64_t width, float* out) {
  float chains[16][64] = {};
  for (int r = 0; r < 16; ++r) {
    float acc[64] = {};
    for (int64_t k = r; k < n_keys; k += 16) {
      const float* v = values + k * head_dim;
      if (width == 64) {
        for (int lane = 0; lane < 64; ++lane) acc[lane] += v[lane] * w[k];
      } else {
        for (int64_t lane = 0; lane < width; ++lane) acc[lane] += v[lane] * w[k];
      }
    }
    for (int lane = 0; lane < 64; ++lane) chains[r][lane] = acc[lane];
  }
  for (int64_t lane = 0; lane < width; ++lane) {
    float t8[8], t4[4];
    for (int r = 0; r < 8; ++r) t8[r] = chains[r + 8][lane] + chains[r][lane];
    for (int r = 0; r < 4; ++r) t4[r] = t8[r + 4] + t8[r];
    out[lane] += (t4[0] + t4[2]) + (t4[1] + t4[3]);
  }
}

}  // namespace

void attention_scores(const float* q, const float* keys, int64_t n_keys, int64_t head_dim,
                      float scale, float* out) {
  attention_scores_multi(&q, 1, keys, &n_keys, head_dim, scale, &out);
}

void attention_scores_multi(const float* const* q, int64_t n_queries, const float* keys,
                            const int64_t* n_keys, int64_t head_dim, float scale,
                            float* const* out) {
  if (runs_avx2_kernels(current_isa())) {
    return detail::attention_scores_avx2(q, n_queries, keys, n_keys, head_dim, scale, out);
  }
  for (int64_t query = 0; query < n_queries; ++query) {
    for (int64_t k = 0; k < n_keys[query]; ++k) {
      out[query][k] = dot_one(q[query], keys + k * head_dim, head_dim) * scale;
    }
  }
}

void exp_nonpositive(const float* x, int64_t n, float* out) {
  if (runs_avx2_kernels(current_isa())) return detail::exp_nonpositive_avx2(x, n, out);
  for (int64_t i = 0; i < n; i += kExpLanes) {
    float in[kExpLanes] = {}, result[kExpLanes];
    const int64_t count = n - i < kExpLanes ? n - i : kExpLanes;
    for (int64_t lane = 0; lane < count; ++lane) in[lane] = x[i + lane];
    exp_lanes(in, result);
    for (int64_t lane = 0; lane < count; ++lane) out[i + lane] = result[lane];
  }
}

void softmax_inplace(float* x, int64_t n) {
  if (runs_avx2_kernels(current_isa())) return detail::softmax_inplace_avx2(x, n);
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  // Groups of 16 as the AVX2 path: lanes l+8 and l, then l+4 and l, then (0+2) + (1+3); each
  // group's float sum is added to a double. The last group is padded with zeros.
  double sum = 0.0;
  for (int64_t i = 0; i < n; i += 16) {
    float shifted[kExpLanes], group[kExpLanes];
    const int64_t count = n - i < kExpLanes ? n - i : kExpLanes;
    for (int lane = 0; lane < kExpLanes; ++lane) {
      shifted[lane] = lane < count ? x[i + lane] - max : -INFINITY;
    }
    exp_lanes(shifted, group);
    for (int64_t lane = 0; lane < count; ++lane) x[i + lane] = group[lane];
    float t8[8], t4[4];
    for (int lane = 0; lane < 8; ++lane) t8[lane] = group[lane + 8] + group[lane];
    for (int lane = 0; lane < 4; ++lane) t4[lane] = t8[lane + 4] + t8[lane];
    sum += static_cast<double>((t4[0] + t4[2]) + (t4[1] + t4[3]));
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void attention_weighted_sum(const float* w, const float* values, int64_t n_keys, int64_t head_dim,
                            float* out) {
  attention_weighted_sum_multi(&w, 1, values, &n_keys, head_dim, &out);
}

void attention_weighted_sum_multi(const float* const* w, int64_t n_queries, const float* values,
                                  const int64_t* n_keys, int64_t head_dim, float* const* out) {
  if (runs_avx2_kernels(current_isa())) {
    return detail::attention_weighted_sum_avx2(w, n_queries, values, n_keys, head_dim, out);
  }
  for (int64_t query = 0; query < n_queries; ++query) {
    for (int64_t d0 = 0; d0 < head_dim; d0 += 64) {
      const int64_t width = head_dim - d0 < 64 ? head_dim - d0 : 64;
      weighted_block(w[query], values + d0, n_keys[query], head_dim, width, out[query] + d0);
    }
  }
}

}  // namespace augur::kernels
