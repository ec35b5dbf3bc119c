// The AMX-INT8 path (matmul_amx.cpp): bit-identical to the portable block-sum kernel
// (matmul_rows_block_sums) for Q8_0 and Q4_0 at M = 1..40, 64, 100, row counts that leave partial
// 16-row tiles, odd block counts and split row ranges; batch invariant, a row's output not
// depending on M; and within a small bound of the lane-sum order the other paths run. Skipped,
// saying so, on a CPU without AMX-INT8 (or whose OS refused the tile-data permission).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/matmul_kernels.h"
#include "kernels/quantize_activations.h"
#include "tensor/matrix.h"

namespace augur::kernels {
namespace {

using gguf::TensorType;

#define AUGUR_SKIP_WITHOUT_AMX()                                                                \
  do {                                                                                          \
    if (!cpu_supports(Isa::kAmx)) {                                                             \
      GTEST_SKIP() << "this CPU (or its OS) cannot run the amx kernel path: AMX-INT8 untested"; \
    }                                                                                           \
  } while (0)

// Random codes with sane fp16 scales of random sign in every block.
std::vector<uint8_t> random_weights(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(gguf::row_bytes(type, cols) * static_cast<size_t>(rows));
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  for (size_t at = 0; at < bytes.size(); at += gguf::traits(type).block_bytes) {
    const uint16_t h = tensor::fp32_to_fp16((rng() % 2 ? -1.0f : 1.0f) * scale(rng));
    std::memcpy(bytes.data() + at, &h, 2);
  }
  return bytes;
}

struct Activations {
  std::vector<float> x;
  std::vector<int8_t> codes;
  std::vector<float> scales;
};

// Normal activations with a few extreme values, so that codes of +-127 meet weight codes of -128.
Activations random_activations(int64_t M, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Activations a;
  a.x.resize(static_cast<size_t>(M * cols));
  for (auto& v : a.x) v = rng() % 17 == 0 ? 40.0f * normal(rng) : normal(rng);
  a.codes.resize(a.x.size());
  a.scales.resize(a.x.size() / 32);
  quantize_rows_q8_0(a.x.data(), M, cols, a.codes.data(), a.scales.data());
  return a;
}

// y = W x over rows [begin, end) by `rows_fn`, split into the given row ranges.
std::vector<float> run(void (*rows_fn)(const detail::MatmulArgs&, int64_t, int64_t),
                       TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t cols,
                       const Activations& x, int64_t M, const std::vector<int64_t>& splits) {
  std::vector<float> y(static_cast<size_t>(M * rows), NAN);
  detail::MatmulArgs args{type, w.data(), gguf::row_bytes(type, cols), rows, cols, x.x.data(),
                          M,    y.data()};
  args.xq = x.codes.data();
  args.xd = x.scales.data();
  int64_t begin = 0;
  for (int64_t end : splits) {
    rows_fn(args, begin, end);
    begin = end;
  }
  rows_fn(args, begin, rows);
  return y;
}

std::vector<int64_t> batch_sizes() {
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 40; ++m) ms.push_back(m);
  ms.push_back(64);
  ms.push_back(100);
  return ms;
}

TEST(MatmulAmx, TilesAgreeBitwiseWithPortableBlockSumsAtEveryBatchSize) {
  AUGUR_SKIP_WITHOUT_AMX();
  uint32_t seed = 1;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    for (int64_t cols : {32, 96, 160, 320}) {
      for (int64_t rows : {1, 7, 16, 17, 23, 37}) {
        const auto w = random_weights(type, rows, cols, seed++);
        for (int64_t M : batch_sizes()) {
          const auto x = random_activations(M, cols, seed++);
          const auto want = run(detail::matmul_rows_block_sums, type, w, rows, cols, x, M, {});
          // Whole, and split at an odd row (a partial tile in the middle of the range).
          for (const std::vector<int64_t>& splits :
               {std::vector<int64_t>{}, std::vector<int64_t>{rows / 3}}) {
            const auto got = run(detail::matmul_rows_amx, type, w, rows, cols, x, M, splits);
            ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0)
                << gguf::type_name(type) << " cols " << cols << " rows " << rows << " M " << M
                << " splits " << splits.size();
          }
        }
      }
    }
  }
}

// Row m of an M-row product equals the same activation row multiplied alone (M = 1) and inside
// batches of every other size, bit for bit.
TEST(MatmulAmx, TilesAreBatchInvariant) {
  AUGUR_SKIP_WITHOUT_AMX();
  const int64_t cols = 256, rows = 29, max_m = 100;
  uint32_t seed = 500;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    const auto w = random_weights(type, rows, cols, seed++);
    const auto all = random_activations(max_m, cols, seed++);
    std::vector<std::vector<float>> alone;
    for (int64_t m = 0; m < max_m; ++m) {
      Activations one;
      one.x.assign(all.x.begin() + m * cols, all.x.begin() + (m + 1) * cols);
      one.codes.assign(all.codes.begin() + m * cols, all.codes.begin() + (m + 1) * cols);
      one.scales.assign(all.scales.begin() + m * cols / 32,
                        all.scales.begin() + (m + 1) * cols / 32);
      alone.push_back(run(detail::matmul_rows_amx, type, w, rows, cols, one, 1, {}));
    }
    for (int64_t M : batch_sizes()) {
      const auto y = run(detail::matmul_rows_amx, type, w, rows, cols, all, M, {});
      for (int64_t m = 0; m < M; ++m) {
        ASSERT_EQ(std::memcmp(alone[m].data(), y.data() + m * rows, rows * 4), 0)
            << gguf::type_name(type) << " row " << m << " of M " << M;
      }
    }
  }
}

// sum over elements of |w x| (decoded weights times decoded activation codes), per output.
std::vector<double> magnitudes(TensorType type, const std::vector<uint8_t>& w, int64_t rows,
                               int64_t cols, const Activations& x, int64_t M) {
  std::vector<float> row(cols);
  std::vector<double> out(static_cast<size_t>(M * rows));
  const size_t pitch = gguf::row_bytes(type, cols);
  for (int64_t r = 0; r < rows; ++r) {
    tensor::dequantize_row(type, w.data() + r * pitch, row.data(), cols);
    for (int64_t m = 0; m < M; ++m) {
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) {
        sum += std::fabs(double(row[c]) * x.codes[m * cols + c] * x.scales[(m * cols + c) / 32]);
      }
      out[m * rows + r] = sum;
    }
  }
  return out;
}

// The two orders sum the same exact block products and differ only by float rounding: each order
// is within (blocks + 2) units of 2^-24 of the sum of |w x| (one rounding per product of scales,
// one per chain step). A planted defect in one weight row (in the lane-sum run) must break that
// bound, so the bound is tight enough to see a real defect.
TEST(MatmulAmx, BlockSumsStayWithinRoundingOfLaneSums) {
  AUGUR_SKIP_WITHOUT_AMX();
  uint32_t seed = 900;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    const int64_t cols = 4096, rows = 23, blocks = cols / 32;
    const auto w = random_weights(type, rows, cols, seed++);
    // The defect: row 5 with every block scale negated.
    auto planted = w;
    for (int64_t s = 0; s < blocks; ++s) {
      planted[gguf::row_bytes(type, cols) * 5 + s * gguf::traits(type).block_bytes + 1] ^= 0x80;
    }
    for (int64_t M : {1, 2, 5, 16, 17, 64}) {
      const auto x = random_activations(M, cols, seed++);
      const auto lanes = run(detail::matmul_rows_scalar, type, w, rows, cols, x, M, {});
      const auto sums = run(detail::matmul_rows_amx, type, w, rows, cols, x, M, {});
      const auto defect = run(detail::matmul_rows_scalar, type, planted, rows, cols, x, M, {});
      const auto magnitude = magnitudes(type, w, rows, cols, x, M);
      size_t differing = 0, caught = 0;
      for (size_t i = 0; i < lanes.size(); ++i) {
        const double bound = 2.0 * (blocks + 2) * std::ldexp(1.0, -24) * magnitude[i];
        differing += lanes[i] != sums[i];
        ASSERT_LE(std::fabs(double(lanes[i]) - sums[i]), bound)
            << gguf::type_name(type) << " M " << M << " element " << i;
        caught += std::fabs(double(defect[i]) - sums[i]) > bound;
      }
      // The orders really differ (else the bound was checked on identical numbers), and the
      // planted defect shows in row 5 of every activation row, and nowhere else.
      if (M >= 16) {
        EXPECT_GT(differing, 0u) << gguf::type_name(type) << " M " << M;
      }
      EXPECT_EQ(caught, static_cast<size_t>(M)) << gguf::type_name(type) << " M " << M;
    }
  }
}

}  // namespace
}  // namespace augur::kernels
