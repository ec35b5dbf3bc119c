// Typed views of a layer's weights in the GGUF mapping, each checked against the shape the
// hyper-parameters imply: a mismatch is a FormatError naming the file, the tensor and both shapes.
#pragma once

#include <string>
#include <vector>

#include "gguf/file.h"
#include "tensor/matrix.h"

namespace augur::model::blocks {

// Tensor `name` as a matrix of `rows` rows of `cols` (ggml ne [cols, rows]), packed for the
// kernels (packed_for_kernels).
tensor::Matrix load_matrix(const gguf::File& file, const std::string& name, int64_t cols,
                           int64_t rows);
// m (a matrix of `file`) with the packed copy the kernel path in use reads, if any
// (kernels::with_packed_weights); the file's pages under a packed matrix are released.
tensor::Matrix packed_for_kernels(const gguf::File& file, const tensor::Matrix& m);
// Tensor `name` of n elements (ne [n]), decoded to floats.
std::vector<float> load_vector(const gguf::File& file, const std::string& name, int64_t n);
// Tensor `name` of shape `ne`, decoded to floats in storage order.
std::vector<float> load_floats(const gguf::File& file, const std::string& name,
                               const std::vector<int64_t>& ne);
// "blk.<layer>.<name>"
std::string layer_tensor(int layer, const char* name);

}  // namespace augur::model::blocks
