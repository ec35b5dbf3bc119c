// matmul against a plain double-precision product of dequantize_row's weights, for every weight
// type, on every ISA path this CPU has, for many M (decode, verify, prefill), odd row counts, row
// tails and 1-3 threads.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "kernels/quantize_activations.h"
#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace augur::kernels {
namespace {

using gguf::TensorType;

struct Weights {
  std::vector<uint8_t> bytes;
  tensor::Matrix matrix;
};

void put_fp16(std::vector<uint8_t>& bytes, size_t at, float value) {
  const uint16_t h = tensor::fp32_to_fp16(value);
  std::memcpy(bytes.data() + at, &h, 2);
}

// Float types: random normal values. Quantized types: random bytes (every code, packed scale,
// sign of a Q6_K scale) with the fp16 super-scales replaced by sane random magnitudes.
Weights make_weights(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  Weights w;
  const size_t row_bytes = gguf::row_bytes(type, cols);
  w.bytes.resize(row_bytes * static_cast<size_t>(rows));
  const auto& traits = gguf::traits(type);
  if (traits.block_elems == 1) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (auto& v : row) v = normal(rng);
      tensor::quantize_row(type, row.data(), w.bytes.data() + r * row_bytes, cols);
    }
  } else {
    for (auto& b : w.bytes) b = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> scale(0.001f, 0.1f);
    for (size_t at = 0; at < w.bytes.size(); at += traits.block_bytes) {
      switch (type) {
        case TensorType::Q8_0:
        case TensorType::Q4_0:
        case TensorType::Q5_0: put_fp16(w.bytes, at, (rng() % 2 ? -1 : 1) * scale(rng)); break;
        case TensorType::Q4_K:
        case TensorType::Q5_K:
          put_fp16(w.bytes, at, scale(rng));
          put_fp16(w.bytes, at + 2, scale(rng));
          break;
        case TensorType::Q6_K: put_fp16(w.bytes, at + 208, scale(rng) / 10); break;
        default: break;
      }
    }
  }
  w.matrix = {type, w.bytes.data(), rows, cols, row_bytes};
  return w;
}

std::vector<float> random_activations(int64_t M, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(M * cols));
  for (auto& v : x) v = normal(rng);
  return x;
}

struct Reference {
  std::vector<double> y;          // [M, rows]
  std::vector<double> magnitude;  // [M, rows]: sum |w x|, the scale of rounding error
};

// The activations the kernel multiplies: x itself, or for Q8_0/Q4_0/Q5_0 weights x after Q8_0
// quantization, for K-quant weights x after Q8_K quantization (decoded back to floats, d * q,
// exactly representable in double).
std::vector<double> effective_activations(gguf::TensorType type, const std::vector<float>& x,
                                          int64_t M, int64_t cols) {
  std::vector<double> out(x.size());
  std::vector<int8_t> q(x.size());
  if (uses_q8_activations(type)) {
    std::vector<float> d(x.size() / 32);
    quantize_rows_q8_0(x.data(), M, cols, q.data(), d.data());
    for (size_t i = 0; i < x.size(); ++i) out[i] = double(d[i / 32]) * q[i];
  } else if (uses_q8_k_activations(type)) {
    std::vector<float> d(x.size() / 256);
    std::vector<int16_t> bsums(x.size() / 16);
    quantize_rows_q8_k(x.data(), M, cols, q.data(), d.data(), bsums.data());
    for (size_t i = 0; i < x.size(); ++i) out[i] = double(d[i / 256]) * q[i];
  } else {
    out.assign(x.begin(), x.end());
  }
  return out;
}

// For weights with a super-block min (Q4_K/Q5_K), the row decoded with one of the two fp16
// super-scales zeroed: `which` 0 keeps only d * sc * q, 1 only -dmin * m (both exact products).
std::vector<float> decoded_part(const tensor::Matrix& w, int64_t r, int which) {
  std::vector<uint8_t> bytes(w.row(r), w.row(r) + w.row_bytes);
  const size_t block = gguf::traits(w.type).block_bytes;
  for (size_t at = 0; at < bytes.size(); at += block) {
    bytes[at + (which == 0 ? 2 : 0)] = 0;
    bytes[at + (which == 0 ? 3 : 1)] = 0;
  }
  std::vector<float> out(static_cast<size_t>(w.cols));
  tensor::dequantize_row(w.type, bytes.data(), out.data(), w.cols);
  return out;
}

Reference reference(const tensor::Matrix& w, const std::vector<float>& x_in, int64_t M) {
  const auto x = effective_activations(w.type, x_in, M, w.cols);
  Reference ref;
  ref.y.assign(static_cast<size_t>(M * w.rows), 0.0);
  ref.magnitude.assign(ref.y.size(), 0.0);
  std::vector<float> row(static_cast<size_t>(w.cols));
  const bool has_mins = w.type == TensorType::Q4_K || w.type == TensorType::Q5_K;
  for (int64_t r = 0; r < w.rows; ++r) {
    tensor::dequantize_row(w.type, w.row(r), row.data(), w.cols);
    // With mins, a weight is a difference of two products whose rounding errors do not cancel:
    // the scale of the error is the sum of both parts' magnitudes.
    const auto scaled = has_mins ? decoded_part(w, r, 0) : row;
    const auto mins = has_mins ? decoded_part(w, r, 1) : std::vector<float>(row.size(), 0.0f);
    for (int64_t m = 0; m < M; ++m) {
      double sum = 0, mag = 0;
      for (int64_t c = 0; c < w.cols; ++c) {
        const double xc = x[static_cast<size_t>(m * w.cols + c)];
        const double term = double(row[c]) * xc;
        sum += term;
        mag += (std::fabs(double(scaled[c])) + std::fabs(double(mins[c]))) * std::fabs(xc);
      }
      ref.y[m * w.rows + r] = sum;
      ref.magnitude[m * w.rows + r] = mag;
    }
  }
  return ref;
}

// Index of the first output further than tolerance * sum|w x| from the reference, or -1. The
// default 1e-5 covers every type; the integer kernels are checked tighter (kIntegerTolerance).
int64_t first_mismatch(const Reference& ref, const std::vector<float>& y, double tolerance = 1e-5) {
  for (size_t i = 0; i < y.size(); ++i) {
    if (!(std::fabs(y[i] - ref.y[i]) <= tolerance * ref.magnitude[i] + 1e-30)) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

// Integer kernels on quantized activations compute sum_b fl(dw * dx_b) * S_b with exact integer
// lane sums S_b: each term carries the rounding of its scale product, each lane's FMA chain one
// rounding per block (at most 5 blocks of 32 or 2 super-blocks in these tests), the 3-level lane
// tree and (Q4_K/Q5_K) the min part's own chain and final additions a few more: at most 12
// roundings of 2^-24 relative to sum |w x| (|w| the scale and min parts summed for Q4_K/Q5_K),
// 7.2e-7; checked at 1e-6 (the float kernels at 1e-5).
constexpr double kIntegerTolerance = 1e-6;

bool integer_kernel(TensorType type) {
  return uses_q8_activations(type) || uses_q8_k_activations(type);
}

std::vector<Isa> isas() {
  return supported_isas();
}

// Column counts per type: tails of 1..31 elements for the float types; whole blocks otherwise.
std::vector<int64_t> test_cols(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16: return {7, 45, 100, 256};
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q5_0: return {32, 160};
    default: return {256, 512};
  }
}

class MatmulTest : public ::testing::TestWithParam<std::tuple<TensorType, Isa>> {
 protected:
  void SetUp() override { set_isa_for_testing(std::get<1>(GetParam())); }
  void TearDown() override { set_isa_for_testing(select_isa(nullptr)); }
};

TEST_P(MatmulTest, MatchesDoubleReferenceForAllShapesAndThreadCounts) {
  const TensorType type = std::get<0>(GetParam());
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 16; ++m) ms.push_back(m);
  ms.push_back(33);
  ms.push_back(100);
  uint32_t seed = 1;
  for (int64_t cols : test_cols(type)) {
    for (int64_t rows : {1, 37}) {
      const auto w = make_weights(type, rows, cols, seed++);
      for (int64_t M : ms) {
        const auto x = random_activations(M, cols, seed++);
        const auto ref = reference(w.matrix, x, M);
        std::vector<float> first;
        for (auto& pool : pools) {
          std::vector<float> y(static_cast<size_t>(M * rows), NAN);
          matmul(w.matrix, x.data(), M, y.data(), pool);
          const int64_t bad =
              first_mismatch(ref, y, integer_kernel(type) ? kIntegerTolerance : 1e-5);
          ASSERT_EQ(bad, -1) << "cols " << cols << " rows " << rows << " M " << M << " threads "
                             << pool.size() << ": y[" << bad / rows << ", " << bad % rows
                             << "] = " << y[bad] << ", reference " << ref.y[bad];
          // Each output is computed by the same code whatever the thread split.
          if (first.empty()) {
            first = y;
          } else {
            ASSERT_EQ(std::memcmp(first.data(), y.data(), y.size() * 4), 0) << "M " << M;
          }
        }
      }
    }
  }
}

// Block scale and signed code of element c of a Q8_0 / Q4_0 / Q5_0 row, straight from the bytes.
std::pair<float, int> scale_and_code(TensorType type, const uint8_t* row, int64_t c) {
  const size_t block_bytes = gguf::traits(type).block_bytes;
  const uint8_t* block = row + block_bytes * static_cast<size_t>(c / 32);
  uint16_t h;
  std::memcpy(&h, block, 2);
  const int i = static_cast<int>(c % 32);
  int code = 0;
  if (type == TensorType::Q8_0) {
    code = static_cast<int8_t>(block[2 + i]);
  } else if (type == TensorType::Q4_0) {
    code = (i < 16 ? (block[2 + i] & 0x0F) : (block[2 + i - 16] >> 4)) - 8;
  } else {  // Q5_0: d, qh[4], qs[16]
    uint32_t qh;
    std::memcpy(&qh, block + 2, 4);
    const int nibble = i < 16 ? (block[6 + i] & 0x0F) : (block[6 + i - 16] >> 4);
    code = (nibble | static_cast<int>(((qh >> i) & 1u) << 4)) - 16;
  }
  return {tensor::fp16_to_fp32(h), code};
}

// A K-quant weight's parts, straight from the bytes (layouts in tensor/blocks.h): super-block
// scales d and dmin, sub-block scale sc and min m, and the code q (Q6_K: q - 32, no min).
struct KParts {
  float d = 0, dmin = 0;
  int sc = 0, m = 0, q = 0;
};

KParts k_parts(TensorType type, const uint8_t* row, int64_t c) {
  const size_t block_bytes = gguf::traits(type).block_bytes;
  const uint8_t* b = row + block_bytes * static_cast<size_t>(c / 256);
  const int e = static_cast<int>(c % 256);
  const auto half = [](const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return tensor::fp16_to_fp32(h);
  };
  KParts k;
  if (type == TensorType::Q6_K) {
    const int h = e / 128, quarter = (e % 128) / 32, l = e % 32;
    const int low = (b[64 * h + l + 32 * (quarter & 1)] >> (4 * (quarter >> 1))) & 0xF;
    const int high = (b[128 + 32 * h + l] >> (2 * quarter)) & 3;
    k.d = half(b + 208);
    k.sc = static_cast<int8_t>(b[192 + e / 16]);
    k.q = (low | (high << 4)) - 32;
    return k;
  }
  k.d = half(b);
  k.dmin = half(b + 2);
  const int j = e / 32, l = e % 32;
  const uint8_t* scales = b + 4;
  if (j < 4) {
    k.sc = scales[j] & 63;
    k.m = scales[j + 4] & 63;
  } else {
    k.sc = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
    k.m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
  const uint8_t* qs = b + (type == TensorType::Q4_K ? 16 : 48);
  k.q = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF;
  if (type == TensorType::Q5_K) k.q |= ((b[16 + l] >> j) & 1) << 4;
  return k;
}

// With x = identity, y[m, r] = W[r, m] for float weights exactly: the kernel's weights are
// bit-identical to dequantize_row's. The integer kernels multiply quantized activations, so a
// one-hot row becomes one code with its scale, and the expected float is the kernel's few
// operations on it, checked to the bit against the weight's codes and scales read from the bytes:
// - Q8_0/Q4_0/Q5_0: code 127, dx = fp16(1/127); y = (dw * dx) * (127 * code);
// - Q4_K/Q5_K: code -127, dk = 1 / (-127.f); y = (dk * d) * (sc * q * -127) + (-dk * dmin) *
//   (m * -127), each product rounded, then the sum;
// - Q6_K: y = (dk * d) * (sc * q * -127).
// M = cols also exercises large-M tiling.
TEST_P(MatmulTest, IdentityActivationsReturnExactlyDecodedWeights) {
  const TensorType type = std::get<0>(GetParam());
  ThreadPool pool(2);
  const float dx = tensor::fp16_to_fp32(tensor::fp32_to_fp16(1.0f / 127.0f));
  const float dk = 1.0f / (-127.0f / 1.0f);
  for (int64_t cols : test_cols(type)) {
    const int64_t rows = 19;
    const auto w = make_weights(type, rows, cols, 77);
    std::vector<float> identity(static_cast<size_t>(cols * cols), 0.0f);
    for (int64_t c = 0; c < cols; ++c) identity[c * cols + c] = 1.0f;
    std::vector<float> y(static_cast<size_t>(cols * rows));
    matmul(w.matrix, identity.data(), cols, y.data(), pool);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      tensor::dequantize_row(type, w.matrix.row(r), row.data(), cols);
      for (int64_t c = 0; c < cols; ++c) {
        float want = row[c];
        if (uses_q8_activations(type)) {
          const auto [dw, code] = scale_and_code(type, w.matrix.row(r), c);
          want = (dw * dx) * static_cast<float>(127 * code);
          // The codes read from the bytes decode to dequantize_row's weight.
          ASSERT_EQ(static_cast<float>(code) * dw, row[c]) << r << ", " << c;
        } else if (uses_q8_k_activations(type)) {
          const KParts k = k_parts(type, w.matrix.row(r), c);
          const float scaled = (dk * k.d) * static_cast<float>(k.sc * k.q * -127);
          if (type == TensorType::Q6_K) {
            want = scaled;
            ASSERT_EQ(k.d * static_cast<float>(k.sc) * static_cast<float>(k.q), row[c]);
          } else {
            const float min = (-dk * k.dmin) * static_cast<float>(k.m * -127);
            want = scaled + min;
            const float d1 = k.d * static_cast<float>(k.sc), m1 = k.dmin * static_cast<float>(k.m);
            const volatile float product = d1 * static_cast<float>(k.q);
            ASSERT_EQ(product - m1, row[c]) << r << ", " << c;
          }
        }
        ASSERT_EQ(y[c * rows + r], want) << r << ", " << c;
      }
    }
  }
}

// Every finite F16 and BF16 value (subnormals, both zeros, the largest) as weights, times x =
// identity, on every path: each is decoded exactly as dequantize_row does (vcvtph2ps for F16, the
// 16 bits moved into the high half for BF16). 263 columns: whole 8-column slices and single ones.
TEST(Matmul, IdentityActivationsDecodeEveryFiniteHalfOnEveryPath) {
  ThreadPool pool(2);
  const int64_t cols = 263;
  std::vector<float> identity(static_cast<size_t>(cols * cols), 0.0f);
  for (int64_t c = 0; c < cols; ++c) identity[c * cols + c] = 1.0f;
  for (TensorType type : {TensorType::F16, TensorType::BF16}) {
    const uint16_t exponent = type == TensorType::F16 ? 0x7C00 : 0x7F80;
    std::vector<uint16_t> halves;
    for (uint32_t h = 0; h < 65536; ++h) {
      if ((h & exponent) != exponent) halves.push_back(static_cast<uint16_t>(h));
    }
    const auto rows = static_cast<int64_t>((halves.size() + cols - 1) / cols);
    halves.resize(static_cast<size_t>(rows * cols), 0);
    std::vector<uint8_t> bytes(halves.size() * 2);
    std::memcpy(bytes.data(), halves.data(), bytes.size());
    const tensor::Matrix w{type, bytes.data(), rows, cols, static_cast<size_t>(cols * 2)};
    std::vector<float> decoded(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      tensor::dequantize_row(type, w.row(r), decoded.data() + r * cols, cols);
    }
    for (Isa isa : supported_isas()) {
      set_isa_for_testing(isa);
      std::vector<float> y(static_cast<size_t>(cols * rows), NAN);
      matmul(w, identity.data(), cols, y.data(), pool);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(y[c * rows + r], decoded[r * cols + c])
              << gguf::type_name(type) << " " << isa_name(isa) << " bits " << std::hex
              << halves[r * cols + c];
        }
      }
    }
  }
  set_isa_for_testing(select_isa(nullptr));
}

// Every path's integer kernels do the float operations of the portable kernel of their order in
// the same order: lane sums (AVX2, AVX-512 VNNI; K-quants and Q5_0 run the AVX2 ones on every SIMD
// path) against the scalar path, block sums (Q8_0/Q4_0 on the amx path) against
// matmul_rows_block_sums: bitwise equal for M = 1..17, 33, 100 (one tile, several tiles, a partial
// tile), odd and even block counts, row counts that leave partial row blocks and unpaired rows,
// and any thread split.
std::vector<int64_t> agreement_ms() {
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 17; ++m) ms.push_back(m);
  ms.push_back(33);
  ms.push_back(100);
  return ms;
}

// Q8_0/Q4_0 in the block-sum order's portable kernel, on x's Q8_0 activations.
std::vector<float> block_sums(const tensor::Matrix& w, const std::vector<float>& x, int64_t M) {
  std::vector<int8_t> codes(static_cast<size_t>(M * w.cols));
  std::vector<float> scales(static_cast<size_t>(M * w.cols / 32));
  quantize_rows_q8_0(x.data(), M, w.cols, codes.data(), scales.data());
  std::vector<float> y(static_cast<size_t>(M * w.rows));
  detail::MatmulArgs args{w.type, w.data, w.row_bytes, w.rows, w.cols, x.data(), M, y.data()};
  args.xq = codes.data();
  args.xd = scales.data();
  detail::matmul_rows_block_sums(args, 0, w.rows);
  return y;
}

// Empty when every SIMD path agrees bitwise with the portable kernel of its order on `w`, else the
// first disagreement.
std::string first_path_disagreement(const tensor::Matrix& w, ThreadPool* pools, int n_pools,
                                    uint32_t& seed) {
  for (int64_t M : agreement_ms()) {
    const auto x = random_activations(M, w.cols, seed++);
    std::vector<float> scalar(static_cast<size_t>(M * w.rows));
    set_isa_for_testing(Isa::kScalar);
    matmul(w, x.data(), M, scalar.data(), pools[0]);
    const bool q8 = w.type == TensorType::Q8_0 || w.type == TensorType::Q4_0;
    const auto blocks = q8 ? block_sums(w, x, M) : std::vector<float>{};
    for (Isa isa : supported_isas()) {
      if (isa == Isa::kScalar) continue;
      set_isa_for_testing(isa);
      const auto& want = q8 && integer_order(isa) == IntegerOrder::kBlockSums ? blocks : scalar;
      // A path that reads a packed copy of the weights (Q8_0/Q4_0 on avx512) runs on both.
      const tensor::Matrix packed = with_packed_weights(w);
      for (const tensor::Matrix* m : {&w, &packed}) {
        if (m == &packed && !packed.packed) continue;
        for (int p = 0; p < n_pools; ++p) {
          std::vector<float> y(scalar.size(), NAN);
          matmul(*m, x.data(), M, y.data(), pools[p]);
          if (std::memcmp(want.data(), y.data(), y.size() * 4) != 0) {
            set_isa_for_testing(select_isa(nullptr));
            return std::string(gguf::type_name(w.type)) + " " + std::string(isa_name(isa)) +
                   (m == &packed ? " packed" : "") + " cols " + std::to_string(w.cols) + " rows " +
                   std::to_string(w.rows) + " M " + std::to_string(M) + " threads " +
                   std::to_string(pools[p].size());
          }
        }
      }
    }
  }
  set_isa_for_testing(select_isa(nullptr));
  return "";
}

TEST(Matmul, IntegerKernelsAgreeBitwiseAcrossPaths) {
  if (supported_isas().size() < 2) GTEST_SKIP() << "this CPU has only the scalar path";
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  uint32_t seed = 100;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_0, TensorType::Q4_K,
                          TensorType::Q5_K, TensorType::Q6_K}) {
    const bool k_quant = uses_q8_k_activations(type);
    for (int64_t cols :
         k_quant ? std::vector<int64_t>{256, 768} : std::vector<int64_t>{32, 96, 320, 512}) {
      // Q8_0 and Q4_0 also in whole and partial groups of 16 packed rows, over three threads.
      const bool packs = type == TensorType::Q8_0 || type == TensorType::Q4_0;
      for (int64_t rows :
           packs ? std::vector<int64_t>{1, 7, 16, 23, 48, 50} : std::vector<int64_t>{1, 7, 23}) {
        const auto w = make_weights(type, rows, cols, seed++);
        EXPECT_EQ(first_path_disagreement(w.matrix, pools, 3, seed), "");
      }
    }
  }
}

// The test observer (set_activation_observer_for_testing) may change the quantized activations,
// and every path must then multiply what it left: tests/support/near_tie.h flips roundings that
// way. Here it zeroes activation row 0's codes, so row 0 of the product must be exactly zero on
// every path, packed or not, whether the rows were quantized on the caller or on the pool, and
// the other rows as without the observer.
TEST(Matmul, ObserverChangesReachTheProductsOnEveryPath) {
  ThreadPool pool(2);
  uint32_t seed = 900;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_0}) {
    const auto w = make_weights(type, 40, 1024, seed++);
    for (Isa isa : supported_isas()) {
      set_isa_for_testing(isa);
      const tensor::Matrix packed = with_packed_weights(w.matrix);
      for (int64_t M : {1, 5, 20}) {  // 20 x 1024 values are quantized on the pool
        const auto x = random_activations(M, w.matrix.cols, seed++);
        std::vector<float> plain(static_cast<size_t>(M * w.matrix.rows));
        matmul(packed, x.data(), M, plain.data(), pool);
        set_activation_observer_for_testing(
            [](const QuantizedActivations& a) { std::fill(a.codes, a.codes + a.cols, int8_t{0}); });
        std::vector<float> y(plain.size(), NAN);
        matmul(packed, x.data(), M, y.data(), pool);
        set_activation_observer_for_testing({});
        for (int64_t r = 0; r < w.matrix.rows; ++r) {
          EXPECT_EQ(y[static_cast<size_t>(r)], 0.0f)
              << gguf::type_name(type) << " " << isa_name(isa) << " M " << M << " row " << r;
        }
        EXPECT_EQ(std::memcmp(y.data() + w.matrix.rows, plain.data() + w.matrix.rows,
                              (y.size() - static_cast<size_t>(w.matrix.rows)) * 4),
                  0)
            << gguf::type_name(type) << " " << isa_name(isa) << " M " << M;
      }
    }
  }
  set_isa_for_testing(select_isa(nullptr));
}

// A matrix of 8 MB and more is handed to the threads in chunks from a shared counter (matmul.cpp,
// for_row_chunks): every row computed exactly once, the same bits on any thread count as on one
// thread, on every path, with a last chunk that is partial.
TEST(Matmul, StreamedMatricesGiveTheSameBitsOnAnyThreadCount) {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  uint32_t seed = 1300;
  // Above 8 MB each. 2100 rows leave a partial chunk and a partial group of 16; 40 rows of 200704
  // columns make chunks of the smallest size, 16 rows, and a last one of 8.
  const std::tuple<TensorType, int64_t, int64_t> shapes[] = {{TensorType::Q8_0, 2100, 4096},
                                                             {TensorType::Q4_0, 2100, 8192},
                                                             {TensorType::Q8_0, 40, 200704}};
  for (const auto& [type, rows, cols] : shapes) {
    const auto weights = make_weights(type, rows, cols, seed++);
    const auto w = with_packed_weights(weights.matrix);
    ASSERT_GE(static_cast<size_t>(rows) * w.row_bytes, size_t{8} << 20);
    for (Isa isa : supported_isas()) {
      if (isa == Isa::kScalar) continue;  // the portable path is covered on small matrices
      set_isa_for_testing(isa);
      for (int64_t M : {1, 5}) {
        const auto x = random_activations(M, cols, seed++);
        std::vector<float> one(static_cast<size_t>(M * rows));
        matmul(w, x.data(), M, one.data(), pools[0]);
        for (auto& pool : pools) {
          std::vector<float> y(one.size(), std::numeric_limits<float>::quiet_NaN());
          matmul(w, x.data(), M, y.data(), pool);
          EXPECT_EQ(std::memcmp(y.data(), one.data(), y.size() * sizeof(float)), 0)
              << gguf::type_name(type) << " " << isa_name(isa) << " M " << M << " threads "
              << pool.size();
        }
      }
    }
    set_isa_for_testing(select_isa(nullptr));
  }
}

// The packer splits groups of rows over threads for large matrices: the same bytes, every byte
// written, whatever the thread count (buffers start filled with a value no packed byte needs).
TEST(Matmul, PackedWeightsAreTheSameOnAnyThreadCount) {
  uint32_t seed = 700;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    for (int64_t rows : {1, 16, 50, 97}) {
      const auto w = make_weights(type, rows, 96, seed++);
      const size_t bytes = packed_bytes(type, rows, 96);
      std::vector<uint8_t> one(bytes, 0xA5);
      pack_rows(w.matrix, one.data(), 1);
      for (int threads : {0, 2, 3, 8}) {
        std::vector<uint8_t> many(bytes, 0x5A);
        pack_rows(w.matrix, many.data(), threads);
        EXPECT_EQ(one, many) << gguf::type_name(type) << " rows " << rows << " threads " << threads;
      }
    }
  }
}

// Scales that reach the int16 and int32 limits of the K-quant kernels: every code and scale at its
// maximum, activations at +-127 (one large value per super-block sets the scale), mixed signs.
// The scale-group layout (packed_weights.h): in each run of eight whole blocks the eight scales
// come first, then the eight payloads in order; later blocks are copied as they are. Read back
// block by block from the description, every row gives the GGUF bytes again.
TEST(Matmul, ScaleGroupLayoutPutsEachRunOfEightScalesFirst) {
  uint32_t seed = 1700;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_0}) {
    for (int64_t cols : {32, 256, 320, 736}) {  // 1, 8, 10 and 23 blocks
      const auto w = make_weights(type, 5, cols, seed++);
      const size_t block = gguf::traits(type).block_bytes, payload = block - 2;
      const int64_t blocks = cols / 32, whole = blocks / 8 * 8;
      std::vector<uint8_t> packed(w.bytes.size(), 0xA5);
      pack_scale_groups(w.matrix, packed.data());
      std::vector<uint8_t> back(w.bytes.size());
      for (int64_t r = 0; r < 5; ++r) {
        const uint8_t* row = packed.data() + r * w.matrix.row_bytes;
        for (int64_t s = 0; s < blocks; ++s) {
          uint8_t* out = back.data() + r * w.matrix.row_bytes + block * s;
          if (s < whole) {
            const uint8_t* group = row + block * (s / 8 * 8);
            std::memcpy(out, group + 2 * (s % 8), 2);
            std::memcpy(out + 2, group + 16 + payload * (s % 8), payload);
          } else {
            std::memcpy(out, row + block * s, block);
          }
        }
      }
      EXPECT_EQ(back, w.bytes) << gguf::type_name(type) << " cols " << cols;
      if (whole > 0) {
        EXPECT_NE(packed, w.bytes) << gguf::type_name(type) << " cols " << cols;
      }
    }
  }
}

// A packed copy is read only by the path whose layout it holds (packed_layout); every other path
// reads `data`. Each copy is tagged with each layout in turn and run on every path this CPU has:
// a path reading its own layout gives the bits of the unpacked matrix, and one reading a copy
// tagged with its layout but holding zeros gives zeros (so it really reads the copy), while a path
// of the other layout ignores the copy whatever it holds.
TEST(Matmul, EachPathReadsOnlyAPackedCopyInItsOwnLayout) {
  using Layout = tensor::Matrix::Layout;
  ThreadPool pool(2);
  uint32_t seed = 1800;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_0}) {
    const auto w = make_weights(type, 32, 512, seed++);
    const auto x = random_activations(3, 512, seed++);
    std::vector<uint8_t> groups(w.bytes.size());
    const std::vector<uint8_t> zeros(w.bytes.size() + (1 << 16), 0);
    pack_scale_groups(w.matrix, groups.data());
    std::vector<uint8_t> lanes;
    if (packed_code_bytes(type) > 0) {
      lanes.resize(packed_bytes(type, 32, 512));
      pack_rows(w.matrix, lanes.data(), 1);
    }
    for (Isa isa : supported_isas()) {
      set_isa_for_testing(isa);
      const Layout own = isa == Isa::kAvx2                                    ? Layout::kScaleGroups
                         : isa == Isa::kAvx512 && packed_code_bytes(type) > 0 ? Layout::kLanes16
                                                                              : Layout::kNone;
      std::vector<float> plain(3 * 32);
      matmul(w.matrix, x.data(), 3, plain.data(), pool);
      for (Layout layout : {Layout::kScaleGroups, Layout::kLanes16}) {
        const auto& copy = layout == Layout::kScaleGroups ? groups : lanes;
        if (copy.empty()) continue;
        for (const std::vector<uint8_t>* bytes : {&copy, &zeros}) {
          tensor::Matrix m = w.matrix;
          m.packed = std::shared_ptr<const uint8_t>(bytes->data(), [](const uint8_t*) {});
          m.packed_layout = layout;
          std::vector<float> y(plain.size(), NAN);
          matmul(m, x.data(), 3, y.data(), pool);
          const std::string what = std::string(gguf::type_name(type)) + " " +
                                   std::string(isa_name(isa)) +
                                   (layout == Layout::kScaleGroups ? " scale groups" : " lanes16") +
                                   (bytes == &zeros ? " of zeros" : "");
          if (layout == own && bytes == &zeros) {
            EXPECT_EQ(y, std::vector<float>(plain.size(), 0.0f)) << what;
          } else {
            EXPECT_EQ(std::memcmp(y.data(), plain.data(), y.size() * 4), 0) << what;
          }
        }
      }
    }
  }
  set_isa_for_testing(select_isa(nullptr));
}

TEST(Matmul, KQuantKernelsAgreeAtExtremeCodesAndScales) {
  if (supported_isas().size() < 2) GTEST_SKIP() << "this CPU has only the scalar path";
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2)};
  uint32_t seed = 900;
  for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    auto w = make_weights(type, 5, 512, seed++);
    const size_t block = gguf::traits(type).block_bytes;
    for (size_t at = 0; at < w.bytes.size(); at += block) {
      // All code and scale bytes at 0xFF (Q6_K: codes 63, scales -1), except the fp16 scales.
      const size_t keep_from = type == TensorType::Q6_K ? 208 : 0,
                   keep_to = type == TensorType::Q6_K ? 210 : 4;
      for (size_t i = 0; i < block; ++i) {
        if (i < keep_from || i >= keep_to) w.bytes[at + i] = 0xFF;
      }
      if (type == TensorType::Q6_K) {
        for (size_t i = 192; i < 208; ++i) w.bytes[at + i] = (i % 2) ? 0x80 : 0x7F;  // -128, 127
      }
    }
    EXPECT_EQ(first_path_disagreement(w.matrix, pools, 2, seed), "");
  }
}

// The float kernels (F32/F16/BF16) of every wider path (AVX-512, and AMX, which runs the AVX-512
// ones) reduce each (weight row, activation row) pair exactly as the AVX2 kernel does: one FMA
// chain over 8 columns at a time, the last cols % 8 columns singly, the same final lane sum.
// Bitwise equal to AVX2 for M = 1..17, 33, 100, column counts with and without 8- and 1-column
// tails, row counts that leave partial row blocks and unpaired rows, and any thread split. (The
// scalar path is not in this comparison: it rounds products separately and sums lanes in another
// order, so it only agrees within the tolerance of MatchesDoubleReference...)
class FloatPathTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    for (Isa isa : {Isa::kAvx2, GetParam()}) {
      if (!cpu_supports(isa)) {
        GTEST_SKIP() << "this CPU cannot run the " << isa_name(isa) << " kernel path";
      }
    }
  }
  void TearDown() override { set_isa_for_testing(select_isa(nullptr)); }
};

TEST_P(FloatPathTest, FloatKernelsAgreeBitwiseWithAvx2) {
  const Isa isa = GetParam();
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 17; ++m) ms.push_back(m);
  ms.push_back(33);
  ms.push_back(100);
  uint32_t seed = 500;
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    for (int64_t cols : {1, 7, 8, 15, 40, 72, 100, 263, 264, 300}) {
      for (int64_t rows : {1, 2, 5, 7, 13, 23}) {
        const auto w = make_weights(type, rows, cols, seed++);
        for (int64_t M : ms) {
          const auto x = random_activations(M, cols, seed++);
          std::vector<float> avx2(static_cast<size_t>(M * rows));
          set_isa_for_testing(Isa::kAvx2);
          matmul(w.matrix, x.data(), M, avx2.data(), pools[0]);
          set_isa_for_testing(isa);
          for (auto& pool : pools) {
            std::vector<float> y(avx2.size(), NAN);
            matmul(w.matrix, x.data(), M, y.data(), pool);
            ASSERT_EQ(std::memcmp(avx2.data(), y.data(), y.size() * 4), 0)
                << gguf::type_name(type) << " " << isa_name(isa) << " cols " << cols << " rows "
                << rows << " M " << M << " threads " << pool.size();
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WiderPaths, FloatPathTest, ::testing::Values(Isa::kAvx512, Isa::kAmx),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(isa_name(info.param));
                         });

std::string param_name(const ::testing::TestParamInfo<std::tuple<TensorType, Isa>>& info) {
  return std::string(gguf::type_name(std::get<0>(info.param))) + "_" +
         std::string(isa_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesAllPaths, MatmulTest,
    ::testing::Combine(::testing::Values(TensorType::F32, TensorType::F16, TensorType::BF16,
                                         TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_0,
                                         TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K),
                       ::testing::ValuesIn(isas())),
    param_name);

TEST(Matmul, ZeroRowsOfActivationsLeavesOutputUntouched) {
  ThreadPool pool(2);
  const auto w = make_weights(TensorType::F32, 4, 8, 3);
  std::vector<float> y(4, 42.0f);
  matmul(w.matrix, nullptr, 0, y.data(), pool);
  EXPECT_EQ(y, std::vector<float>(4, 42.0f));
}

TEST(Matmul, TypeWithoutKernelIsUnsupportedNamingIt) {
  ThreadPool pool(1);
  std::vector<uint8_t> bytes(110);
  const tensor::Matrix w{TensorType::Q3_K, bytes.data(), 1, 256, 110};
  std::vector<float> x(256), y(1);
  try {
    matmul(w, x.data(), 1, y.data(), pool);
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("Q3_K"), std::string::npos) << e.what();
  }
}

TEST(Matmul, CheckerCatchesAnOutputOffByARelativeThousandth) {
  ThreadPool pool(1);
  const auto w = make_weights(TensorType::F16, 5, 256, 11);
  const auto x = random_activations(3, 256, 12);
  const auto ref = reference(w.matrix, x, 3);
  std::vector<float> y(15);
  matmul(w.matrix, x.data(), 3, y.data(), pool);
  ASSERT_EQ(first_mismatch(ref, y), -1);
  y[7] += static_cast<float>(1e-3 * ref.magnitude[7]);
  EXPECT_EQ(first_mismatch(ref, y), 7);
}

// A planted defect: the kernels read one sub-block scale wrong (here: the weights the reference
// saw have one scale changed, in the last super-block of one row). The reference check must fail
// on exactly that row, on every path, while it passes on the intact weights.
TEST(Matmul, ReferenceCheckCatchesOneWrongSubBlockScale) {
  ThreadPool pool(2);
  for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q5_0}) {
    const int64_t rows = 6, cols = 512, M = 3;
    auto w = make_weights(type, rows, cols, 21);
    const auto x = random_activations(M, cols, 22);
    const auto ref = reference(w.matrix, x, M);
    // Q4_K/Q5_K: sub-block 1's 6-bit scale (low bits of scale byte 1); Q6_K: scale byte of
    // sub-block 3; Q5_0: the fp16 block scale's lowest mantissa bits.
    const size_t block = gguf::traits(type).block_bytes;
    const size_t at = 3 * w.matrix.row_bytes + w.matrix.row_bytes - block +
                      (type == TensorType::Q6_K   ? 195
                       : type == TensorType::Q5_0 ? 0
                                                  : 5);
    for (Isa isa : supported_isas()) {
      set_isa_for_testing(isa);
      std::vector<float> y(static_cast<size_t>(M * rows));
      matmul(w.matrix, x.data(), M, y.data(), pool);
      ASSERT_EQ(first_mismatch(ref, y, kIntegerTolerance), -1) << isa_name(isa);
      const uint8_t saved = w.bytes[at];
      w.bytes[at] = static_cast<uint8_t>(saved ^ (type == TensorType::Q5_0 ? 0x07 : 0x01));
      matmul(w.matrix, x.data(), M, y.data(), pool);
      w.bytes[at] = saved;
      EXPECT_EQ(first_mismatch(ref, y, kIntegerTolerance), 3)
          << gguf::type_name(type) << " " << isa_name(isa);
    }
    set_isa_for_testing(select_isa(nullptr));
  }
}

}  // namespace
}  // namespace augur::kernels
