// matmul against a plain double-precision product of dequantize_row's weights, for every weight
// type, on every ISA path this CPU has, for many M (decode, verify, prefill), odd row counts, row
// tails and 1-3 threads.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
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
        case TensorType::Q4_0: put_fp16(w.bytes, at, (rng() % 2 ? -1 : 1) * scale(rng)); break;
        case TensorType::Q4_K:
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

// The activations the kernel multiplies: x itself, or for Q8_0/Q4_0 weights x after Q8_0
// quantization (decoded back to floats, d * q, exactly representable in double).
std::vector<double> effective_activations(gguf::TensorType type, const std::vector<float>& x,
                                          int64_t M, int64_t cols) {
  if (!uses_q8_activations(type)) return {x.begin(), x.end()};
  std::vector<int8_t> q(x.size());
  std::vector<float> d(x.size() / 32);
  quantize_rows_q8_0(x.data(), M, cols, q.data(), d.data());
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = double(d[i / 32]) * q[i];
  return out;
}

Reference reference(const tensor::Matrix& w, const std::vector<float>& x_in, int64_t M) {
  const auto x = effective_activations(w.type, x_in, M, w.cols);
  Reference ref;
  ref.y.assign(static_cast<size_t>(M * w.rows), 0.0);
  ref.magnitude.assign(ref.y.size(), 0.0);
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    tensor::dequantize_row(w.type, w.row(r), row.data(), w.cols);
    for (int64_t m = 0; m < M; ++m) {
      double sum = 0, mag = 0;
      for (int64_t c = 0; c < w.cols; ++c) {
        const double term = double(row[c]) * x[static_cast<size_t>(m * w.cols + c)];
        sum += term;
        mag += std::fabs(term);
      }
      ref.y[m * w.rows + r] = sum;
      ref.magnitude[m * w.rows + r] = mag;
    }
  }
  return ref;
}

// Index of the first output further than 1e-5 * sum|w x| from the reference, or -1.
int64_t first_mismatch(const Reference& ref, const std::vector<float>& y) {
  for (size_t i = 0; i < y.size(); ++i) {
    if (!(std::fabs(y[i] - ref.y[i]) <= 1e-5 * ref.magnitude[i] + 1e-30)) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
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
    case TensorType::Q4_0: return {32, 160};
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
          const int64_t bad = first_mismatch(ref, y);
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

// Block scale and signed code of element c of a Q8_0 / Q4_0 row, straight from the bytes.
std::pair<float, int> scale_and_code(TensorType type, const uint8_t* row, int64_t c) {
  const size_t block_bytes = gguf::traits(type).block_bytes;
  const uint8_t* block = row + block_bytes * static_cast<size_t>(c / 32);
  uint16_t h;
  std::memcpy(&h, block, 2);
  const int i = static_cast<int>(c % 32);
  const int code = type == TensorType::Q8_0
                       ? int{static_cast<int8_t>(block[2 + i])}
                       : (i < 16 ? (block[2 + i] & 0x0F) : (block[2 + i - 16] >> 4)) - 8;
  return {tensor::fp16_to_fp32(h), code};
}

// With x = identity, y[m, r] = W[r, m] exactly: the kernel's weights are bit-identical to
// dequantize_row's. For Q8_0/Q4_0 (integer products on Q8_0 activations) the one-hot activation
// becomes code 127 with scale dx = fp16(1/127), so y = (dw * dx) * (127 * code), one rounding each:
// every weight code and scale is still recovered exactly. M = cols also exercises large-M tiling.
TEST_P(MatmulTest, IdentityActivationsReturnExactlyDecodedWeights) {
  const TensorType type = std::get<0>(GetParam());
  ThreadPool pool(2);
  const float dx = tensor::fp16_to_fp32(tensor::fp32_to_fp16(1.0f / 127.0f));
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

// Every path's integer kernels (AVX2, AVX-512 VNNI) do the scalar path's float operations in the
// same order: bitwise equal for M = 1..16, 33, 100 (one tile, several tiles, a partial tile),
// odd and even block counts, row counts that leave partial row blocks and unpaired rows, and any
// thread split.
TEST(Matmul, IntegerKernelsAgreeBitwiseAcrossPaths) {
  if (supported_isas().size() < 2) GTEST_SKIP() << "this CPU has only the scalar path";
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 16; ++m) ms.push_back(m);
  ms.push_back(33);
  ms.push_back(100);
  uint32_t seed = 100;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    for (int64_t cols : {32, 96, 320}) {
      for (int64_t rows : {1, 7, 23}) {
        const auto w = make_weights(type, rows, cols, seed++);
        for (int64_t M : ms) {
          const auto x = random_activations(M, cols, seed++);
          std::vector<float> scalar(static_cast<size_t>(M * rows));
          set_isa_for_testing(Isa::kScalar);
          matmul(w.matrix, x.data(), M, scalar.data(), pools[0]);
          for (Isa isa : supported_isas()) {
            if (isa == Isa::kScalar) continue;
            set_isa_for_testing(isa);
            for (auto& pool : pools) {
              std::vector<float> y(scalar.size(), NAN);
              matmul(w.matrix, x.data(), M, y.data(), pool);
              ASSERT_EQ(std::memcmp(scalar.data(), y.data(), y.size() * 4), 0)
                  << gguf::type_name(type) << " " << isa_name(isa) << " cols " << cols << " rows "
                  << rows << " M " << M << " threads " << pool.size();
            }
          }
        }
      }
    }
  }
  set_isa_for_testing(select_isa(nullptr));
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

INSTANTIATE_TEST_SUITE_P(AllTypesAllPaths, MatmulTest,
                         ::testing::Combine(::testing::Values(TensorType::F32, TensorType::F16,
                                                              TensorType::BF16, TensorType::Q8_0,
                                                              TensorType::Q4_0, TensorType::Q4_K,
                                                              TensorType::Q6_K),
                                            ::testing::ValuesIn(isas())),
                         param_name);

TEST(Matmul, ZeroRowsOfActivationsLeavesOutputUntouched) {
  ThreadPool pool(2);
  const auto w = make_weights(TensorType::F32, 4, 8, 3);
  std::vector<float> y(4, 42.0f);
  matmul(w.matrix, nullptr, 0, y.data(), pool);
  EXPECT_EQ(y, std::vector<float>(4, 42.0f));
}

TEST(Matmul, TypeWithoutKernelIsUnsupported) {
  ThreadPool pool(1);
  std::vector<uint8_t> bytes(176);
  const tensor::Matrix w{TensorType::Q5_K, bytes.data(), 1, 256, 176};
  std::vector<float> x(256), y(1);
  EXPECT_THROW(matmul(w, x.data(), 1, y.data(), pool), Unsupported);
}

TEST(Matmul, CheckerCatchesAnOutputOffByARelativeThousandth) {
  ThreadPool pool(1);
  const auto w = make_weights(TensorType::Q4_K, 5, 256, 11);
  const auto x = random_activations(3, 256, 12);
  const auto ref = reference(w.matrix, x, 3);
  std::vector<float> y(15);
  matmul(w.matrix, x.data(), 3, y.data(), pool);
  ASSERT_EQ(first_mismatch(ref, y), -1);
  y[7] += static_cast<float>(1e-3 * ref.magnitude[7]);
  EXPECT_EQ(first_mismatch(ref, y), 7);
}

}  // namespace
}  // namespace augur::kernels
