// Portable matmul path: the same tiling as the SIMD paths. Float weights are decoded 32 at a time
// with eight f32 lanes of accumulation per activation row (so the compiler can vectorise with the
// baseline ISA); quantized weights run the integer kernels on quantized activations with the
// same float operations, in the same order, as the AVX2 path (bitwise equal results).
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "tensor/block_decode.h"
#include "tensor/blocks.h"

namespace augur::kernels::detail {
namespace {

using gguf::TensorType;

// A decoder turns 32-element step s of a weight row into floats; types without blocks also decode
// single elements for the tail of a row whose length is not a multiple of 32.
struct DecodeF32 {
  static constexpr bool kHasTail = true;
  static void decode(const uint8_t* row, int64_t s, float* w) {
    std::memcpy(w, row + 128 * s, 128);
  }
  static float decode1(const uint8_t* row, int64_t c) {
    float v;
    std::memcpy(&v, row + 4 * c, 4);
    return v;
  }
};

struct DecodeF16 {
  static constexpr bool kHasTail = true;
  static void decode(const uint8_t* row, int64_t s, float* w) {
    for (int i = 0; i < 32; ++i) w[i] = decode1(row, 32 * s + i);
  }
  static float decode1(const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    return tensor::fp16_to_fp32(h);
  }
};

struct DecodeBF16 {
  static constexpr bool kHasTail = true;
  static void decode(const uint8_t* row, int64_t s, float* w) {
    for (int i = 0; i < 32; ++i) w[i] = decode1(row, 32 * s + i);
  }
  static float decode1(const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    return tensor::bf16_to_fp32(h);
  }
};

// y[m * ldy] = dot(weight row, x[m * ldx ..]) for m < TM.
template <class D, int TM>
void tile_kernel(const uint8_t* wrow, int64_t cols, const float* x, int64_t ldx, float* y,
                 int64_t ldy) {
  float acc[TM][8] = {};
  float w[32];
  const int64_t steps = cols / 32;
  for (int64_t s = 0; s < steps; ++s) {
    D::decode(wrow, s, w);
    for (int m = 0; m < TM; ++m) {
      const float* xm = x + m * ldx + 32 * s;
      for (int i = 0; i < 32; i += 8) {
        for (int lane = 0; lane < 8; ++lane) acc[m][lane] += w[i + lane] * xm[i + lane];
      }
    }
  }
  float tail[TM] = {};
  if constexpr (D::kHasTail) {
    for (int64_t c = steps * 32; c < cols; ++c) {
      const float wc = D::decode1(wrow, c);
      for (int m = 0; m < TM; ++m) tail[m] += wc * x[m * ldx + c];
    }
  }
  for (int m = 0; m < TM; ++m) {
    const float* a = acc[m];
    y[m * ldy] = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7])) + tail[m];
  }
}

// Signed codes and scale of block s of a Q8_0 / Q4_0 row (layouts in tensor/blocks.h).
struct CodesQ8_0 {
  static float codes(const uint8_t* row, int64_t s, int8_t* q) {
    const auto& block = reinterpret_cast<const tensor::BlockQ8_0*>(row)[s];
    std::memcpy(q, block.qs, 32);
    return tensor::fp16_to_fp32(block.d);
  }
};

struct CodesQ4_0 {
  static float codes(const uint8_t* row, int64_t s, int8_t* q) {
    const auto& block = reinterpret_cast<const tensor::BlockQ4_0*>(row)[s];
    for (int i = 0; i < 16; ++i) {
      q[i] = static_cast<int8_t>((block.qs[i] & 0x0F) - 8);
      q[i + 16] = static_cast<int8_t>((block.qs[i] >> 4) - 8);
    }
    return tensor::fp16_to_fp32(block.d);
  }
};

struct CodesQ5_0 {
  static float codes(const uint8_t* row, int64_t s, int8_t* q) {
    const auto& block = reinterpret_cast<const tensor::BlockQ5_0*>(row)[s];
    uint32_t qh;
    std::memcpy(&qh, block.qh, sizeof qh);
    for (int i = 0; i < 16; ++i) {
      q[i] = static_cast<int8_t>(((block.qs[i] & 0x0F) | (((qh >> i) & 1u) << 4)) - 16);
      q[i + 16] = static_cast<int8_t>(((block.qs[i] >> 4) | (((qh >> (i + 16)) & 1u) << 4)) - 16);
    }
    return tensor::fp16_to_fp32(block.d);
  }
};

// The AVX2 integer kernel's arithmetic step for step (matmul_avx2.cpp, int_tile_kernel): eight
// exact int32 lane sums per block, acc[lane] = fma(dw * dx, sum, acc[lane]) (fmaf rounds once, as
// the instruction does), lanes summed in the AVX2 horizontal order. So both paths agree bit for
// bit.
template <class C, int TM>
void int_tile_kernel(const uint8_t* wrow, int64_t cols, const int8_t* xq, const float* xd,
                     int64_t ldx, float* y, int64_t ldy) {
  float acc[TM][8] = {};
  int8_t q[32];
  const int64_t blocks = cols / 32, ldd = ldx / 32;
  for (int64_t s = 0; s < blocks; ++s) {
    const float dw = C::codes(wrow, s, q);
    for (int m = 0; m < TM; ++m) {
      const int8_t* x = xq + m * ldx + 32 * s;
      const float d = dw * xd[m * ldd + s];
      for (int lane = 0; lane < 8; ++lane) {
        int32_t sum = 0;
        for (int i = 4 * lane; i < 4 * lane + 4; ++i) sum += int32_t{q[i]} * int32_t{x[i]};
        acc[m][lane] = std::fmaf(d, static_cast<float>(sum), acc[m][lane]);
      }
    }
  }
  for (int m = 0; m < TM; ++m) {
    const float* a = acc[m];
    y[m * ldy] = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
  }
}

template <class C>
void run_int(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  for_each_tile(
      a, row_begin, row_end, 8, [](int) { return 1; },
      [&a](int tm, int64_t row, int, int64_t m0) {
        const uint8_t* wrow = a.w + row * static_cast<int64_t>(a.row_bytes);
        const int8_t* xq = a.xq + m0 * a.cols;
        const float* xd = a.xd + m0 * (a.cols / 32);
        float* y = a.y + m0 * a.rows + row;
        switch (tm) {
          case 1: int_tile_kernel<C, 1>(wrow, a.cols, xq, xd, a.cols, y, a.rows); break;
          case 2: int_tile_kernel<C, 2>(wrow, a.cols, xq, xd, a.cols, y, a.rows); break;
          case 3: int_tile_kernel<C, 3>(wrow, a.cols, xq, xd, a.cols, y, a.rows); break;
          case 4: int_tile_kernel<C, 4>(wrow, a.cols, xq, xd, a.cols, y, a.rows); break;
          case 5: int_tile_kernel<C, 5>(wrow, a.cols, xq, xd, a.cols, y, a.rows); break;
          case 6: int_tile_kernel<C, 6>(wrow, a.cols, xq, xd, a.cols, y, a.rows); break;
          case 7: int_tile_kernel<C, 7>(wrow, a.cols, xq, xd, a.cols, y, a.rows); break;
          default: int_tile_kernel<C, 8>(wrow, a.cols, xq, xd, a.cols, y, a.rows); break;
        }
      });
}

// One K-quant super-block unpacked to integers: code[e] is the weight code of element e (unsigned
// for Q4_K/Q5_K, q - 32 for Q6_K) and scale[e] its sub-block scale; min[j] the 6-bit min of
// sub-block j (Q4_K/Q5_K); d and dmin the fp16 super-block scales.
struct KBlock {
  int code[256], scale[256], min[8];
  float d, dmin;
};

void unpack_scales_mins(const uint8_t* packed, KBlock& k) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    tensor::scale_min_q4_k(j, packed, sc, m);
    k.min[j] = m;
    for (int l = 0; l < 32; ++l) k.scale[32 * j + l] = sc;
  }
}

// How the mins enter the sum (ggml's AVX2 kernels): Q4_K in four float lanes, Q5_K as one float,
// Q6_K has none.
enum class MinPart { kLanes, kScalar, kNone };

struct KQ4_K {
  static constexpr MinPart kMin = MinPart::kLanes;
  static void unpack(const uint8_t* row, int64_t s, KBlock& k) {
    const auto& b = reinterpret_cast<const tensor::BlockQ4_K*>(row)[s];
    k.d = tensor::load_fp16(b.d);
    k.dmin = tensor::load_fp16(b.dmin);
    unpack_scales_mins(b.scales, k);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32;
      k.code[e] = (b.qs[32 * (j / 2) + e % 32] >> (4 * (j % 2))) & 0xF;
    }
  }
};

struct KQ5_K {
  static constexpr MinPart kMin = MinPart::kScalar;
  static void unpack(const uint8_t* row, int64_t s, KBlock& k) {
    const auto& b = reinterpret_cast<const tensor::BlockQ5_K*>(row)[s];
    k.d = tensor::load_fp16(b.d);
    k.dmin = tensor::load_fp16(b.dmin);
    unpack_scales_mins(b.scales, k);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32, l = e % 32;
      k.code[e] = ((b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF) | (((b.qh[l] >> j) & 1) << 4);
    }
  }
};

struct KQ6_K {
  static constexpr MinPart kMin = MinPart::kNone;
  static void unpack(const uint8_t* row, int64_t s, KBlock& k) {
    const auto& b = reinterpret_cast<const tensor::BlockQ6_K*>(row)[s];
    k.d = tensor::load_fp16(b.d);
    k.dmin = 0.0f;
    for (int e = 0; e < 256; ++e) {
      const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
      const int low = (b.ql[64 * half + l + 32 * (quarter & 1)] >> (4 * (quarter >> 1))) & 0xF;
      const int high = (b.qh[32 * half + l] >> (2 * quarter)) & 3;
      k.code[e] = (low | (high << 4)) - 32;
      k.scale[e] = b.scales[e / 16];
    }
  }
};

// llama.cpp's AVX2 vec_dot_q{4,5,6}_K_q8_K, float operation for float operation (matmul_avx2.cpp,
// kquant_tile_kernel, does the same with SIMD integers). Per super-block and activation row:
//   lane u (elements 4u..4u+3 of every 32) = exact int32 sum over the super-block of
//     sub-block scale x weight code x activation code;
//   acc[u] = fma(xd * d, float(lane u), acc[u]);
//   Q4_K: minlane[k] = exact int32 min[2k] * (bsums[4k] + bsums[4k+1]) + min[2k+1] * (...);
//         acc_m[k] = fma(-xd * dmin, float(minlane[k]), acc_m[k]);
//   Q5_K: summs = fma(-xd * dmin, float(sum of the four minlanes), summs) (the compiler contracts
//         ggml's `summs += dmin * isum` into an FMA, as GCC does in C with -mfma).
// At the end y = hsum8(acc) [+ (acc_m[0] + acc_m[2]) + (acc_m[1] + acc_m[3]) | + summs].
template <class K, int TM>
void kquant_tile_kernel(const uint8_t* wrow, int64_t cols, const int8_t* xq, const float* xd,
                        const int16_t* xbsums, int64_t ldx, float* y, int64_t ldy) {
  float acc[TM][8] = {}, acc_m[TM][4] = {}, summs[TM] = {};
  KBlock k;
  const int64_t blocks = cols / 256;
  for (int64_t s = 0; s < blocks; ++s) {
    K::unpack(wrow, s, k);
    for (int m = 0; m < TM; ++m) {
      const int8_t* x = xq + m * ldx + 256 * s;
      const float yd = xd[m * (ldx / 256) + s];
      int32_t lanes[8] = {};
      for (int e = 0; e < 256; ++e) lanes[(e % 32) / 4] += k.scale[e] * k.code[e] * x[e];
      const float d = yd * k.d;
      for (int u = 0; u < 8; ++u) acc[m][u] = std::fmaf(d, static_cast<float>(lanes[u]), acc[m][u]);
      if constexpr (K::kMin != MinPart::kNone) {
        const int16_t* bs = xbsums + m * (ldx / 16) + 16 * s;
        int32_t min_lanes[4];
        for (int q = 0; q < 4; ++q) {
          min_lanes[q] = k.min[2 * q] * (bs[4 * q] + bs[4 * q + 1]) +
                         k.min[2 * q + 1] * (bs[4 * q + 2] + bs[4 * q + 3]);
        }
        const float dmin = -yd * k.dmin;
        if constexpr (K::kMin == MinPart::kLanes) {
          for (int q = 0; q < 4; ++q) {
            acc_m[m][q] = std::fmaf(dmin, static_cast<float>(min_lanes[q]), acc_m[m][q]);
          }
        } else {
          const int32_t isum = (min_lanes[0] + min_lanes[1]) + (min_lanes[2] + min_lanes[3]);
          summs[m] = std::fmaf(dmin, static_cast<float>(isum), summs[m]);
        }
      }
    }
  }
  for (int m = 0; m < TM; ++m) {
    const float* a = acc[m];
    const float sum = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
    if constexpr (K::kMin == MinPart::kLanes) {
      y[m * ldy] = sum + ((acc_m[m][0] + acc_m[m][2]) + (acc_m[m][1] + acc_m[m][3]));
    } else if constexpr (K::kMin == MinPart::kScalar) {
      y[m * ldy] = sum + summs[m];
    } else {
      y[m * ldy] = sum;
    }
  }
}

template <class K>
void run_kquant(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  for_each_tile(
      a, row_begin, row_end, 8, [](int) { return 1; },
      [&a](int tm, int64_t row, int, int64_t m0) {
        const uint8_t* wrow = a.w + row * static_cast<int64_t>(a.row_bytes);
        const int8_t* xq = a.xq + m0 * a.cols;
        const float* xd = a.xd + m0 * (a.cols / 256);
        const int16_t* bs = a.xbsums + m0 * (a.cols / 16);
        float* y = a.y + m0 * a.rows + row;
        switch (tm) {
          case 1: kquant_tile_kernel<K, 1>(wrow, a.cols, xq, xd, bs, a.cols, y, a.rows); break;
          case 2: kquant_tile_kernel<K, 2>(wrow, a.cols, xq, xd, bs, a.cols, y, a.rows); break;
          case 3: kquant_tile_kernel<K, 3>(wrow, a.cols, xq, xd, bs, a.cols, y, a.rows); break;
          case 4: kquant_tile_kernel<K, 4>(wrow, a.cols, xq, xd, bs, a.cols, y, a.rows); break;
          case 5: kquant_tile_kernel<K, 5>(wrow, a.cols, xq, xd, bs, a.cols, y, a.rows); break;
          case 6: kquant_tile_kernel<K, 6>(wrow, a.cols, xq, xd, bs, a.cols, y, a.rows); break;
          case 7: kquant_tile_kernel<K, 7>(wrow, a.cols, xq, xd, bs, a.cols, y, a.rows); break;
          default: kquant_tile_kernel<K, 8>(wrow, a.cols, xq, xd, bs, a.cols, y, a.rows); break;
        }
      });
}

template <class D>
void run(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  for_each_tile(
      a, row_begin, row_end, 8, [](int) { return 1; },
      [&a](int tm, int64_t row, int, int64_t m0) {
        const uint8_t* wrow = a.w + row * static_cast<int64_t>(a.row_bytes);
        const float* x = a.x + m0 * a.cols;
        float* y = a.y + m0 * a.rows + row;
        switch (tm) {
          case 1: tile_kernel<D, 1>(wrow, a.cols, x, a.cols, y, a.rows); break;
          case 2: tile_kernel<D, 2>(wrow, a.cols, x, a.cols, y, a.rows); break;
          case 3: tile_kernel<D, 3>(wrow, a.cols, x, a.cols, y, a.rows); break;
          case 4: tile_kernel<D, 4>(wrow, a.cols, x, a.cols, y, a.rows); break;
          case 5: tile_kernel<D, 5>(wrow, a.cols, x, a.cols, y, a.rows); break;
          case 6: tile_kernel<D, 6>(wrow, a.cols, x, a.cols, y, a.rows); break;
          case 7: tile_kernel<D, 7>(wrow, a.cols, x, a.cols, y, a.rows); break;
          default: tile_kernel<D, 8>(wrow, a.cols, x, a.cols, y, a.rows); break;
        }
      });
}

}  // namespace

void matmul_rows_scalar(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.type) {
    case TensorType::F32: return run<DecodeF32>(a, row_begin, row_end);
    case TensorType::F16: return run<DecodeF16>(a, row_begin, row_end);
    case TensorType::BF16: return run<DecodeBF16>(a, row_begin, row_end);
    case TensorType::Q8_0: return run_int<CodesQ8_0>(a, row_begin, row_end);
    case TensorType::Q4_0: return run_int<CodesQ4_0>(a, row_begin, row_end);
    case TensorType::Q5_0: return run_int<CodesQ5_0>(a, row_begin, row_end);
    case TensorType::Q4_K: return run_kquant<KQ4_K>(a, row_begin, row_end);
    case TensorType::Q5_K: return run_kquant<KQ5_K>(a, row_begin, row_end);
    case TensorType::Q6_K: return run_kquant<KQ6_K>(a, row_begin, row_end);
    default: break;
  }
  AUGUR_CHECK(false, "matmul() admits only types with a decoder");
}

}  // namespace augur::kernels::detail
