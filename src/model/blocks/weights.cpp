#include "model/blocks/weights.h"

#include <fmt/format.h>

#include "common/error.h"
#include "kernels/packed_weights.h"

namespace augur::model::blocks {
namespace {

std::string shape_string(const std::vector<int64_t>& ne) {
  return fmt::format("[{}]", fmt::join(ne, ", "));
}

const gguf::TensorInfo& shaped_tensor(const gguf::File& file, const std::string& name,
                                      const std::vector<int64_t>& expected) {
  const auto& t = file.tensor(name);
  if (t.ne != expected) {
    throw FormatError(fmt::format("{}: tensor '{}': shape {}, expected {}", file.path(), t.name,
                                  shape_string(t.ne), shape_string(expected)));
  }
  return t;
}

}  // namespace

tensor::Matrix load_matrix(const gguf::File& file, const std::string& name, int64_t cols,
                           int64_t rows) {
  return packed_for_kernels(file, tensor::Matrix::from(shaped_tensor(file, name, {cols, rows})));
}

tensor::Matrix packed_for_kernels(const gguf::File& file, const tensor::Matrix& m) {
  auto packed = kernels::with_packed_weights(m);
  // The kernels read the packed copy: the mapped original need not stay resident.
  if (packed.packed) file.release(packed.data, static_cast<size_t>(packed.rows) * packed.row_bytes);
  return packed;
}

std::vector<float> load_vector(const gguf::File& file, const std::string& name, int64_t n) {
  return load_floats(file, name, {n});
}

std::vector<float> load_floats(const gguf::File& file, const std::string& name,
                               const std::vector<int64_t>& ne) {
  const auto& t = shaped_tensor(file, name, ne);
  const tensor::Matrix m = tensor::Matrix::from(t);
  std::vector<float> v(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    tensor::dequantize_row(m.type, m.row(r), v.data() + r * m.cols, m.cols);
  }
  return v;
}

std::string layer_tensor(int layer, const char* name) {
  return fmt::format("blk.{}.{}", layer, name);
}

}  // namespace augur::model::blocks
