#include "tensor/matrix.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "common/error.h"
#include "tensor/block_decode.h"
#include "tensor/blocks.h"

namespace augur::tensor {
namespace {

using gguf::TensorType;

constexpr std::string_view kDecodable = "F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K";

std::string shape_string(const std::vector<int64_t>& ne) {
  return fmt::format("[{}]", fmt::join(ne, ", "));
}

// Matrix `index` of the consecutive [cols, rows] matrices tensor `t` holds (0 for a 2-D one).
Matrix view(const gguf::TensorInfo& t, int64_t index) {
  if (!has_decoder(t.type)) {
    throw Unsupported(fmt::format("tensor '{}': type {} has no decoder (supported: {})", t.name,
                                  gguf::type_name(t.type), kDecodable));
  }
  Matrix m;
  m.type = t.type;
  m.cols = t.ne.empty() ? 1 : t.ne[0];
  m.rows = t.ne.size() >= 2 ? t.ne[1] : 1;
  const auto& traits = gguf::traits(t.type);
  if (m.cols % traits.block_elems != 0) {
    throw FormatError(
        fmt::format("tensor '{}': row length {} is not a multiple of the {} block "
                    "size {}",
                    t.name, m.cols, traits.name, traits.block_elems));
  }
  m.row_bytes = gguf::row_bytes(t.type, m.cols);
  // gguf::File bounds each dimension and the tensor's bytes, so these products fit a size_t.
  const size_t matrix_bytes = m.row_bytes * static_cast<size_t>(m.rows);
  if (matrix_bytes * static_cast<size_t>(index + 1) > t.n_bytes) {
    throw FormatError(
        fmt::format("tensor '{}': {} matrices of {} rows of {} bytes exceed its {} "
                    "data bytes",
                    t.name, index + 1, m.rows, m.row_bytes, t.n_bytes));
  }
  m.data = t.data + matrix_bytes * static_cast<size_t>(index);
  return m;
}

}  // namespace

bool has_decoder(TensorType type) {
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

Matrix Matrix::from(const gguf::TensorInfo& t) {
  // Trailing dimensions of 1 do not add a rank: [4096, 32000, 1] is a 2-D weight.
  size_t rank = t.ne.size();
  while (rank > 0 && t.ne[rank - 1] == 1) --rank;
  if (rank > 2) {
    throw FormatError(fmt::format("tensor '{}': shape {} has rank {}, expected a 2-D matrix",
                                  t.name, shape_string(t.ne), rank));
  }
  return view(t, 0);
}

Matrix Matrix::slice_of(const gguf::TensorInfo& t, int64_t index) {
  if (t.ne.size() != 3) {
    throw FormatError(fmt::format("tensor '{}': shape {}, expected 3 dimensions [cols, rows, n]",
                                  t.name, shape_string(t.ne)));
  }
  if (index < 0 || index >= t.ne[2]) {
    throw FormatError(
        fmt::format("tensor '{}': shape {} has no matrix {}", t.name, shape_string(t.ne), index));
  }
  return view(t, index);
}

void dequantize_row(TensorType type, const uint8_t* src, float* dst, int64_t n) {
  if (!has_decoder(type)) {
    throw Unsupported(fmt::format("dequantize: type {} has no decoder (supported: {})",
                                  gguf::type_name(type), kDecodable));
  }
  const auto& traits = gguf::traits(type);
  AUGUR_CHECK(n >= 0 && n % traits.block_elems == 0, "n must be a whole number of blocks");
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case TensorType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = fp16_to_fp32(h);
      }
      return;
    case TensorType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = bf16_to_fp32(h);
      }
      return;
    case TensorType::Q8_0: {
      const auto* blocks = reinterpret_cast<const BlockQ8_0*>(src);
      for (int64_t b = 0; b < n / 32; ++b) decode_q8_0(blocks[b], dst + 32 * b);
      return;
    }
    case TensorType::Q4_0: {
      const auto* blocks = reinterpret_cast<const BlockQ4_0*>(src);
      for (int64_t b = 0; b < n / 32; ++b) decode_q4_0(blocks[b], dst + 32 * b);
      return;
    }
    case TensorType::Q5_0: {
      const auto* blocks = reinterpret_cast<const BlockQ5_0*>(src);
      for (int64_t b = 0; b < n / 32; ++b) decode_q5_0(blocks[b], dst + 32 * b);
      return;
    }
    case TensorType::Q5_K: {
      const auto* blocks = reinterpret_cast<const BlockQ5_K*>(src);
      for (int64_t part = 0; part < n / 32; ++part) {
        decode_q5_k(blocks[part / 8], static_cast<int>(part % 8), dst + 32 * part);
      }
      return;
    }
    case TensorType::Q4_K: {
      const auto* blocks = reinterpret_cast<const BlockQ4_K*>(src);
      for (int64_t part = 0; part < n / 32; ++part) {
        decode_q4_k(blocks[part / 8], static_cast<int>(part % 8), dst + 32 * part);
      }
      return;
    }
    case TensorType::Q6_K: {
      const auto* blocks = reinterpret_cast<const BlockQ6_K*>(src);
      for (int64_t part = 0; part < n / 32; ++part) {
        decode_q6_k(blocks[part / 8], static_cast<int>(part % 8), dst + 32 * part);
      }
      return;
    }
    default: break;
  }
  AUGUR_CHECK(false, "has_decoder and dequantize_row list the same types");
}

}  // namespace augur::tensor
