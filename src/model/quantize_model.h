// Quantizing a whole GGUF model file (`augur quantize`), the way `llama-quantize --pure` does it:
// which tensors get the target type, which fall back, which are copied as they are, the tensor and
// metadata order of the output, and general.file_type / general.quantization_version.
// For Q8_0 and Q4_0 the output is byte-identical to llama-quantize's (tensor/quantize.h encodes
// those exactly). Owns no model weights: it streams one tensor at a time from the mapped input to
// a gguf::Writer, rows in chunks, so memory stays at one chunk per call whatever the model size.
// Encoding a row is tensor/quantize.h's job; the file format is gguf/'s.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "gguf/types.h"
#include "kernels/thread_pool.h"

namespace augur::model {

// The types `augur quantize` produces: Q8_0, Q4_0, Q4_K, Q6_K.
std::span<const gguf::TensorType> quantize_targets();

// Parses a target name (case-insensitive: "Q8_0", "q4_k", ...). Throws InvalidArgument naming the
// value and listing the allowed ones.
gguf::TensorType parse_quantize_target(std::string_view name);

// llama.cpp's LLAMA_FTYPE for a file quantized to `target`, as llama-quantize writes it into
// general.file_type: Q8_0 -> 7 (MOSTLY_Q8_0), Q4_0 -> 2 (MOSTLY_Q4_0), Q4_K -> 15 (MOSTLY_Q4_K_M:
// llama-quantize's "Q4_K" is an alias of Q4_K_M, and with --pure every weight is Q4_K either way),
// Q6_K -> 18 (MOSTLY_Q6_K).
uint32_t llama_file_type(gguf::TensorType target);

// llama.cpp's rule for whether a tensor is quantized at all (tensor_allows_quantization): at least
// two dimensions counted as ggml_n_dims does (trailing 1s do not count), a name ending in "weight",
// and none of the excluded kinds (norms, MoE router, position/token-type embeddings, conv and
// RWKV mixing weights, ...). Everything else is copied unchanged.
bool allows_quantization(const gguf::TensorInfo& tensor);

// The type `tensor` gets in a `target` file. Not allowed: its own type. Allowed: `target`, unless
// the row length ne[0] is not a whole number of target blocks; then the fallback is
//   Q6_K -> Q8_0 (as llama.cpp), Q4_K -> Q8_0 (llama.cpp uses Q5_0, which augur cannot encode or
//   run; Q8_0 is never coarser), and F16 when even that does not fit, or for Q8_0/Q4_0 targets
//   (where llama.cpp gives up with "no tensor type fallback").
gguf::TensorType planned_type(const gguf::TensorInfo& tensor, gguf::TensorType target);

// One output tensor: where it comes from and what it becomes.
struct TensorPlan {
  const gguf::TensorInfo* source = nullptr;  // owned by the input File
  gguf::TensorType type = gguf::TensorType::F32;
  bool convert = false;   // false: the bytes are copied as they are (type == source->type)
  bool fallback = false;  // planned type differs from the target although the tensor is allowed
};

// The output tensors in llama.cpp's order (llama_model_loader's weights_map: tensors outside
// "blk.N." first, then by layer number, then by name). Throws before anything is written:
// Unsupported when a tensor to convert is already quantized to another type (llama-quantize
// refuses requantization too: it compounds rounding error; quantize from the F16/BF16/F32
// original) or is of a type that is not a float (I8..I64, F64), or the input is one shard of a
// split model.
std::vector<TensorPlan> plan_quantization(const gguf::File& input, gguf::TensorType target);

struct QuantizeProgress {
  std::string_view tensor;  // name of the tensor being written
  size_t index = 0;         // 1-based position in the output
  size_t count = 0;         // number of tensors
  gguf::TensorType from = gguf::TensorType::F32, to = gguf::TensorType::F32;
  bool tensor_done = false;  // the last report for this tensor
  double fraction = 0;       // of all input elements, in [0, 1]
};

struct QuantizeSummary {
  size_t n_converted = 0, n_copied = 0, n_fallback = 0;
  uint64_t bytes_in = 0, bytes_out = 0;  // tensor data only
};

// Writes the quantized model to `output` (through gguf::Writer: to output + ".partial", renamed
// into place on success, removed on failure). Metadata: every input key in order, minus the
// split.* keys and with general.quantization_version = 2 then general.file_type appended last (as
// llama-quantize's gguf_set_val_u32 does). Conversion rows run on `pool`; `progress` (optional)
// is called on the calling thread after each chunk. Throws InvalidArgument when `output` is the
// input file, Unsupported as plan_quantization, Error on I/O failure. `chunk_elements` is how many
// input elements are converted per chunk (at least one row); the output does not depend on it.
inline constexpr int64_t kDefaultChunkElements = int64_t{1} << 20;  // 4 MiB of f32
QuantizeSummary quantize_model(const gguf::File& input, const std::filesystem::path& output,
                               gguf::TensorType target, kernels::ThreadPool& pool,
                               const std::function<void(const QuantizeProgress&)>& progress = {},
                               int64_t chunk_elements = kDefaultChunkElements);

}  // namespace augur::model
