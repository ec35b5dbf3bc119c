// Portable matmul path: the same tiling as the SIMD paths, weights decoded 32 at a time by
// tensor/block_decode.h (so bit-identical to dequantize_row), eight f32 lanes of accumulation per
// activation row so the compiler can vectorise with the baseline ISA.
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

struct DecodeQ4_K {
  static constexpr bool kHasTail = false;
  static void decode(const uint8_t* row, int64_t s, float* w) {
    tensor::decode_q4_k(reinterpret_cast<const tensor::BlockQ4_K*>(row)[s / 8],
                        static_cast<int>(s % 8), w);
  }
  static float decode1(const uint8_t*, int64_t) { return 0.0f; }
};

struct DecodeQ6_K {
  static constexpr bool kHasTail = false;
  static void decode(const uint8_t* row, int64_t s, float* w) {
    tensor::decode_q6_k(reinterpret_cast<const tensor::BlockQ6_K*>(row)[s / 8],
                        static_cast<int>(s % 8), w);
  }
  static float decode1(const uint8_t*, int64_t) { return 0.0f; }
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
    case TensorType::Q4_K: return run<DecodeQ4_K>(a, row_begin, row_end);
    case TensorType::Q6_K: return run<DecodeQ6_K>(a, row_begin, row_end);
    default: break;
  }
  AUGUR_CHECK(false, "matmul() admits only types with a decoder");
}

}  // namespace augur::kernels::detail
