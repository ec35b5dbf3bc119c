// Matrix::from and Matrix::slice_of shape/type checks, and decoding the quantized fixtures against
// the F32 weights they were made from.
#include "tensor/matrix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "gguf/file.h"
#include "tensor/blocks.h"
#include "test_paths.h"

namespace augur::tensor {
namespace {

using gguf::TensorType;

gguf::TensorInfo info(std::string name, std::vector<int64_t> ne, TensorType type,
                      const uint8_t* data, size_t n_bytes) {
  gguf::TensorInfo t;
  t.name = std::move(name);
  t.ne = std::move(ne);
  t.type = type;
  t.data = data;
  t.n_bytes = n_bytes;
  return t;
}

TEST(Matrix, FromTwoDimensionalTensorTakesRowsFromSecondDimension) {
  std::vector<uint8_t> bytes(3 * 2 * 34);
  const auto m = Matrix::from(info("w", {64, 3}, TensorType::Q8_0, bytes.data(), bytes.size()));
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(m.cols, 64);
  EXPECT_EQ(m.row_bytes, 68u);
  EXPECT_EQ(m.type, TensorType::Q8_0);
  EXPECT_EQ(m.row(2), bytes.data() + 136);
}

TEST(Matrix, OneDimensionalTensorIsOneRow) {
  std::vector<uint8_t> bytes(40 * 4);
  const auto m = Matrix::from(info("norm", {40}, TensorType::F32, bytes.data(), bytes.size()));
  EXPECT_EQ(m.rows, 1);
  EXPECT_EQ(m.cols, 40);
  EXPECT_EQ(m.row_bytes, 160u);
}

TEST(Matrix, TrailingUnitDimensionsDoNotCountAsRank) {
  std::vector<uint8_t> bytes(8 * 4 * 2);
  const auto m = Matrix::from(info("w", {8, 4, 1}, TensorType::F16, bytes.data(), bytes.size()));
  EXPECT_EQ(m.rows, 4);
  EXPECT_EQ(m.cols, 8);
}

TEST(Matrix, RankThreeIsFormatErrorNamingTensor) {
  std::vector<uint8_t> bytes(8 * 4 * 2 * 4);
  try {
    (void)Matrix::from(
        info("blk.0.ffn_gate_exps.weight", {8, 4, 2}, TensorType::F32, bytes.data(), bytes.size()));
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.ffn_gate_exps.weight"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[8, 4, 2]"), std::string::npos) << e.what();
  }
}

TEST(Matrix, SliceOfThreeDimensionalTensorIsThatMatrix) {
  std::vector<uint8_t> bytes(64 * 3 * 34 / 32 * 4);  // 4 Q8_0 matrices [64, 3]
  const auto t =
      info("blk.0.ffn_up_exps.weight", {64, 3, 4}, TensorType::Q8_0, bytes.data(), bytes.size());
  for (int64_t index = 0; index < 4; ++index) {
    const auto m = Matrix::slice_of(t, index);
    EXPECT_EQ(m.rows, 3);
    EXPECT_EQ(m.cols, 64);
    EXPECT_EQ(m.row_bytes, 68u);
    EXPECT_EQ(m.row(0), bytes.data() + index * 3 * 68);
  }
}

TEST(Matrix, SliceOutsideTheTensorOrOfAMatrixIsFormatErrorNamingTensor) {
  std::vector<uint8_t> bytes(8 * 4 * 2 * 4);
  const auto experts =
      info("blk.1.ffn_down_exps.weight", {8, 4, 2}, TensorType::F32, bytes.data(), bytes.size());
  const auto matrix =
      info("blk.1.ffn_down.weight", {8, 8}, TensorType::F32, bytes.data(), bytes.size());
  const auto short_data = info("blk.1.ffn_gate_exps.weight", {8, 4, 2}, TensorType::F32,
                               bytes.data(), bytes.size() / 2);
  for (const auto& [t, index, expected] :
       {std::tuple{experts, int64_t{2}, "has no matrix 2"},
        std::tuple{experts, int64_t{-1}, "has no matrix -1"},
        std::tuple{matrix, int64_t{0}, "expected 3 dimensions"},
        std::tuple{short_data, int64_t{1}, "exceed its 128 data bytes"}}) {
    try {
      (void)Matrix::slice_of(t, index);
      FAIL() << "expected FormatError for " << t.name << " " << index;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(t.name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW((void)Matrix::slice_of(short_data, 0));
}

TEST(Matrix, TypeWithoutDecoderIsUnsupportedNamingTensorAndType) {
  std::vector<uint8_t> bytes(176 * 2);
  try {
    (void)Matrix::from(
        info("output.weight", {256, 2}, TensorType::Q3_K, bytes.data(), bytes.size()));
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("output.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Q3_K"), std::string::npos) << e.what();
  }
}

// Decodes every row of `name` from both files; checks each quantized element against the F32
// original within `steps` of its block's scale |d| (Q8_0 and Q4_0 blocks both start with d).
void expect_close_to_f32(const std::string& quant_file, const std::string& name, double steps) {
  auto f32_file = gguf::File::open(testing::fixtures_dir() / "tiny-llama.gguf");
  auto q_file = gguf::File::open(testing::fixtures_dir() / quant_file);
  const auto w = Matrix::from(f32_file->tensor(name));
  const auto q = Matrix::from(q_file->tensor(name));
  ASSERT_EQ(w.type, TensorType::F32);
  ASSERT_EQ(q.rows, w.rows);
  ASSERT_EQ(q.cols, w.cols);
  const auto block_bytes = gguf::traits(q.type).block_bytes;
  std::vector<float> exact(w.cols), decoded(q.cols);
  double worst = 0;
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, w.row(r), exact.data(), w.cols);
    dequantize_row(q.type, q.row(r), decoded.data(), q.cols);
    for (int64_t c = 0; c < w.cols; ++c) {
      uint16_t d_bits;
      std::memcpy(&d_bits, q.row(r) + (c / 32) * block_bytes, 2);
      const double step = std::fabs(fp16_to_fp32(d_bits));
      const double err = std::fabs(double(decoded[c]) - exact[c]);
      ASSERT_LE(err, steps * step) << name << " row " << r << " col " << c;
      worst = std::max(worst, err / step);
    }
  }
  // Not a trivial pass: the rounding error really spans most of half a step.
  EXPECT_GT(worst, 0.4);
}

TEST(Matrix, TinyLlamaQ8_0DecodesWithinHalfAStepOfF32Weights) {
  // q = round(x / d): half a step, plus up to 127 * 2^-11 steps from storing d in fp16.
  expect_close_to_f32("tiny-llama-Q8_0.gguf", "blk.0.attn_q.weight", 0.5 + 127.0 / 2048);
}

TEST(Matrix, TinyLlamaQ4_0DecodesWithinOneStepOfF32Weights) {
  // The largest-magnitude element is exact; its opposite-sign partners clamp at nibble 15, up to a
  // full step away; the fp16 scale adds up to 8 * 2^-11 steps.
  expect_close_to_f32("tiny-llama-Q4_0.gguf", "blk.0.attn_q.weight", 1.0 + 8.0 / 2048);
  expect_close_to_f32("tiny-llama-Q4_0.gguf", "blk.3.ffn_down.weight", 1.0 + 8.0 / 2048);
}

TEST(Matrix, TinyLlamaBf16DecodesToRoundedF32Weights) {
  auto f32_file = gguf::File::open(testing::fixtures_dir() / "tiny-llama.gguf");
  auto bf_file = gguf::File::open(testing::fixtures_dir() / "tiny-llama-BF16.gguf");
  const auto w = Matrix::from(f32_file->tensor("blk.1.attn_v.weight"));
  const auto b = Matrix::from(bf_file->tensor("blk.1.attn_v.weight"));
  ASSERT_EQ(b.type, TensorType::BF16);
  std::vector<float> exact(w.cols), decoded(b.cols);
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, w.row(r), exact.data(), w.cols);
    dequantize_row(b.type, b.row(r), decoded.data(), b.cols);
    for (int64_t c = 0; c < w.cols; ++c)
      ASSERT_EQ(decoded[c], bf16_to_fp32(fp32_to_bf16(exact[c])));
  }
}

}  // namespace
}  // namespace augur::tensor
