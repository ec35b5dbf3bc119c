#include "tensor/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "tensor/block_decode.h"
#include "tensor/blocks.h"
#include "tensor/matrix.h"

namespace augur::tensor {
namespace {

using gguf::TensorType;

void store_fp16(uint16_t& dst, float value) {
  const uint16_t h = fp32_to_fp16(value);
  std::memcpy(&dst, &h, sizeof h);
}

// ggml's quantize_row_q8_0_ref: d = amax / 127, q = round-half-away(x / d).
void quantize_q8_0(const float* x, BlockQ8_0& b) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_fp16(b.d, d);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(std::round(x[i] * id));
}

// ggml's quantize_row_q4_0_ref: the element of largest magnitude maps to nibble 0 (d = max / -8);
// nibbles are truncated after adding 8.5 and capped at 15.
void quantize_q4_0(const float* x, BlockQ4_0& b) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < 32; ++i) {
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_fp16(b.d, d);
  for (int i = 0; i < 16; ++i) {
    const auto lo =
        static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x[i] * id + 8.5f))));
    const auto hi = static_cast<uint8_t>(
        std::min(15, static_cast<int>(static_cast<int8_t>(x[i + 16] * id + 8.5f))));
    b.qs[i] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// ggml's quantize_row_q5_0_ref: as Q4_0 with 5-bit codes; the element of largest magnitude maps
// to code 0 (d = max / -16); codes are truncated after adding 16.5 and capped at 31; the fifth bit
// of element e goes to bit e of qh.
void quantize_q5_0(const float* x, BlockQ5_0& b) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < 32; ++i) {
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  const float d = max / -16;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_fp16(b.d, d);
  uint32_t qh = 0;
  for (int i = 0; i < 16; ++i) {
    const int lo = std::min(31, static_cast<int>(static_cast<int8_t>(x[i] * id + 16.5f)));
    const int hi = std::min(31, static_cast<int>(static_cast<int8_t>(x[i + 16] * id + 16.5f)));
    b.qs[i] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
    qh |= static_cast<uint32_t>((lo & 0x10) >> 4) << i;
    qh |= static_cast<uint32_t>((hi & 0x10) >> 4) << (i + 16);
  }
  std::memcpy(b.qh, &qh, sizeof qh);
}

// ---- K-quants: ggml's reference quantizers (quantize_row_q{4,5,6}_K_ref), step for step ----
// This file is compiled with -ffp-contract=off (CMakeLists.txt), as ggml-quants.c is in effect
// (ggml-base is built without FMA on x86), so every product below is rounded on its own.

// ggml's nearest_int: round half to even through the mantissa of v + 1.5 * 2^23 (|v| < 2^22).
int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS

// ggml's make_qkx2_quants with use_mad = false: codes L in [0, nmax] and a scale and min (returned
// scale, *neg_min = -min) for x ~ scale * L + min with min <= 0, chosen by weighted least squares
// over nstep + 1 trial inverse scales (rmin + rdelta * is + nmax) / (max - min), starting from
// the plain min/max fit; a trial replaces the best one only if its weighted squared error is
// strictly lower.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* neg_min, uint8_t* Laux, float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *neg_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i], lf = static_cast<float>(l);
      sum_l += w * lf;
      sum_l2 += w * lf * lf;
      sum_xl += w * lf * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        diff = diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

// ggml's make_qx_quants with rmse_type 1 and no importance weights (weights x^2): symmetric codes
// L = l + nmax, l in [-nmax, nmax - 1], for the element of largest magnitude at -nmax; the scale
// is the weighted least-squares one, improved over 18 trial inverse scales -(nmax + 0.1 is) / max
// (is = -9..9, 0 skipped) when one fits strictly better (sumlx^2 / suml2 larger).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const auto clamp = [nmax](int l) { return std::max(-nmax, std::min(nmax - 1, l)); };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp(nearest_int(iscale * x[i]));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i], lf = static_cast<float>(l);
    sumlx += w * x[i] * lf;
    suml2 += w * lf * lf;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp(nearest_int(iscale * x[i]));
      const float w = x[i] * x[i], lf = static_cast<float>(l);
      sumlx += w * x[i] * lf;
      suml2 += w * lf * lf;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i)
        L[i] = static_cast<int8_t>(nmax + clamp(nearest_int(iscale * x[i])));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// The 6-bit scale and min codes of Q4_K/Q5_K sub-block j into the 12 packed bytes (the inverse of
// scale_min_q4_k in tensor/block_decode.h); sub-blocks must be stored in order 0..7.
void pack_scale_min(int j, uint8_t ls, uint8_t lm, uint8_t* scales) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
    scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
    scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
  }
}

// The shared part of quantize_row_q4_K_ref and quantize_row_q5_K_ref: per sub-block of 32, weights
// av_x + |x| (av_x the rms of the sub-block) and make_qkx2_quants; the 8 scales and 8 mins coded in
// 6 bits against their maxima (d = fp16(max_scale / 63), dmin = fp16(max_min / 63)); then every
// code recomputed from the stored scales, nearest_int((x + dmin * m) / (d * sc)) clamped to
// [0, nmax] (a sub-block whose d * sc is 0 keeps make_qkx2_quants' codes). Returns codes in L.
void quantize_k_with_mins(const float* x, int nmax, float rmin, float rdelta, int nstep,
                          uint16_t& d_out, uint16_t& dmin_out, uint8_t* packed, uint8_t* L) {
  float mins[8], scales[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xj = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xj[l]);
    scales[j] =
        make_qkx2_quants(32, nmax, xj, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(packed, 0, 12);
  for (int j = 0; j < 8; ++j) {
    const auto ls = static_cast<uint8_t>(
        std::min(63, static_cast<int>(static_cast<uint8_t>(nearest_int(inv_scale * scales[j])))));
    const auto lm = static_cast<uint8_t>(
        std::min(63, static_cast<int>(static_cast<uint8_t>(nearest_int(inv_min * mins[j])))));
    pack_scale_min(j, ls, lm, packed);
  }
  const uint16_t d_h = fp32_to_fp16(max_scale / 63.0f), dmin_h = fp32_to_fp16(max_min / 63.0f);
  d_out = d_h;
  dmin_out = dmin_h;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_q4_k(j, packed, sc, m);
    const float d = fp16_to_fp32(d_h) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = fp16_to_fp32(dmin_h) * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      const int q = nearest_int((x[32 * j + l] + dm) / d);
      L[32 * j + l] = static_cast<uint8_t>(std::max(0, std::min(nmax, q)));
    }
  }
}

// ggml's quantize_row_q4_K_ref: make_qkx2_quants(32, 15, ..., rmin -1, rdelta 0.1, 20 steps).
void quantize_q4_k(const float* x, BlockQ4_K& b) {
  uint8_t L[256];
  uint16_t d, dmin;
  quantize_k_with_mins(x, 15, -1.0f, 0.1f, 20, d, dmin, b.scales, L);
  std::memcpy(&b.d, &d, 2);
  std::memcpy(&b.dmin, &dmin, 2);
  for (int p = 0; p < 4; ++p) {
    for (int l = 0; l < 32; ++l) {
      b.qs[32 * p + l] = static_cast<uint8_t>(L[64 * p + l] | (L[64 * p + l + 32] << 4));
    }
  }
}

// ggml's quantize_row_q5_K_ref: make_qkx2_quants(32, 31, ..., rmin -0.5, rdelta 0.1, 15 steps);
// codes above 15 keep their low 4 bits in qs and set bit 2p (2p + 1 for the second sub-block of
// pair p) of qh[l].
void quantize_q5_k(const float* x, BlockQ5_K& b) {
  uint8_t L[256];
  uint16_t d, dmin;
  quantize_k_with_mins(x, 31, -0.5f, 0.1f, 15, d, dmin, b.scales, L);
  std::memcpy(&b.d, &d, 2);
  std::memcpy(&b.dmin, &dmin, 2);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int p = 0; p < 4; ++p) {
    for (int l = 0; l < 32; ++l) {
      int l1 = L[64 * p + l], l2 = L[64 * p + l + 32];
      if (l1 > 15) {
        l1 -= 16;
        b.qh[l] |= static_cast<uint8_t>(1 << (2 * p));
      }
      if (l2 > 15) {
        l2 -= 16;
        b.qh[l] |= static_cast<uint8_t>(2 << (2 * p));
      }
      b.qs[32 * p + l] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
  }
}

// ggml's quantize_row_q6_K_ref: per sub-block of 16, make_qx_quants(16, 32, rmse_type 1); the 16
// scales coded as int8 against the one of largest magnitude (iscale = -128 / max_scale, d =
// fp16(1 / iscale), codes min(127, nearest_int(iscale * scale))); a super-block whose scales are
// all below 1e-15 is all zero bytes. Codes are recomputed from the stored scales (nearest_int(x /
// (d * sc)) clamped to [-32, 31], plus 32), except in sub-blocks whose d * sc is 0.
void quantize_q6_k(const float* x, BlockQ6_K& b) {
  int8_t L[256];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int t = 0; t < 16; ++t) {
    scales[t] = make_qx_quants(16, 32, x + 16 * t, L + 16 * t);
    const float abs_scale = std::fabs(scales[t]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[t];
    }
  }
  std::memset(&b, 0, sizeof b);
  if (max_abs_scale < kGroupMaxEps) return;  // d = fp16(0) is the zero bytes too
  const float iscale = -128.0f / max_scale;
  const uint16_t d_h = fp32_to_fp16(1 / iscale);
  std::memcpy(&b.d, &d_h, 2);
  for (int t = 0; t < 16; ++t) {
    b.scales[t] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[t])));
  }
  for (int t = 0; t < 16; ++t) {
    const float d = fp16_to_fp32(d_h) * static_cast<float>(b.scales[t]);
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      const int l = nearest_int(x[16 * t + i] / d);
      L[16 * t + i] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }
  for (int half = 0; half < 2; ++half) {
    const int8_t* Lh = L + 128 * half;
    for (int l = 0; l < 32; ++l) {
      const int q1 = Lh[l] & 0xF, q2 = Lh[l + 32] & 0xF, q3 = Lh[l + 64] & 0xF,
                q4 = Lh[l + 96] & 0xF;
      b.ql[64 * half + l] = static_cast<uint8_t>(q1 | (q3 << 4));
      b.ql[64 * half + l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      b.qh[32 * half + l] =
          static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                               ((Lh[l + 96] >> 4) << 6));
    }
  }
}

template <class Block, void (*kEncode)(const float*, Block&)>
void quantize_blocks(const float* src, uint8_t* dst, int64_t n, int64_t block_elems) {
  for (int64_t b = 0; b < n / block_elems; ++b) {
    Block block;
    kEncode(src + b * block_elems, block);
    std::memcpy(dst + b * sizeof(Block), &block, sizeof(Block));
  }
}

}  // namespace

bool has_quantizer(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: return true;
    default: return false;
  }
}

void quantize_row(TensorType type, const float* src, uint8_t* dst, int64_t n) {
  if (!has_quantizer(type)) {
    throw Unsupported(fmt::format(
        "quantize: type {} has no encoder (supported: F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, "
        "Q5_K, Q6_K)",
        gguf::type_name(type)));
  }
  AUGUR_CHECK(n >= 0 && n % gguf::traits(type).block_elems == 0,
              "n must be a whole number of blocks");
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case TensorType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_fp16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case TensorType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case TensorType::Q8_0: quantize_blocks<BlockQ8_0, quantize_q8_0>(src, dst, n, 32); return;
    case TensorType::Q4_0: quantize_blocks<BlockQ4_0, quantize_q4_0>(src, dst, n, 32); return;
    case TensorType::Q5_0: quantize_blocks<BlockQ5_0, quantize_q5_0>(src, dst, n, 32); return;
    case TensorType::Q4_K: quantize_blocks<BlockQ4_K, quantize_q4_k>(src, dst, n, 256); return;
    case TensorType::Q5_K: quantize_blocks<BlockQ5_K, quantize_q5_k>(src, dst, n, 256); return;
    case TensorType::Q6_K: quantize_blocks<BlockQ6_K, quantize_q6_k>(src, dst, n, 256); return;
    default: break;
  }
  AUGUR_CHECK(false, "has_quantizer and quantize_row list the same types");
}

}  // namespace augur::tensor
