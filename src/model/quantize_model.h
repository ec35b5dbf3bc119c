// Quantizing a whole GGUF model file (`augur quantize`) the way llama-quantize does it: with one
// tensor type for every weight (`llama-quantize --pure`), or as the Q4_K_M / Q5_K_M file-type mixes
// (llama-quantize's per-tensor rules: Q6_K for output.weight and for some attn_v / ffn_down layers,
// ...); which tensors fall back, which are copied as they are, the tensor and metadata order of
// the output, and general.file_type / general.quantization_version.
// For Q8_0 and Q4_0 the output is byte-identical to llama-quantize's (tensor/quantize.h encodes
// those exactly; the other types follow ggml's reference quantizers but are not checked against a
// llama-quantize file). Owns no model weights: it streams one tensor at a time from the mapped
// input to a gguf::Writer, rows in chunks, so memory stays at one chunk per call whatever the model
// size. Encoding a row is tensor/quantize.h's job; the file format is gguf/'s.
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

// What `augur quantize` makes: every weight of one type (mix false: `llama-quantize --pure`), or
// a llama-quantize file-type mix (mix true, type its default: Q4_K for Q4_K_M, Q5_K for Q5_K_M).
struct QuantizeTarget {
  gguf::TensorType type = gguf::TensorType::Q8_0;
  bool mix = false;
  QuantizeTarget() = default;
  QuantizeTarget(gguf::TensorType t, bool m = false) : type(t), mix(m) {}  // NOLINT: implicit
  bool operator==(const QuantizeTarget&) const = default;
  std::string name() const;  // "Q4_K", "Q4_K_M", ...
};

// The targets of `augur quantize`: Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K (pure) and Q4_K_M, Q5_K_M.
std::span<const QuantizeTarget> quantize_targets();

// Parses a target name (case-insensitive: "Q8_0", "q4_k", "Q4_K_M", ...). Throws InvalidArgument
// naming the value and listing the allowed ones.
QuantizeTarget parse_quantize_target(std::string_view name);

// llama.cpp's LLAMA_FTYPE for a file quantized to `target`, as llama-quantize writes it into
// general.file_type: Q8_0 -> 7, Q4_0 -> 2, Q5_0 -> 8, Q4_K and Q4_K_M -> 15 (MOSTLY_Q4_K_M:
// llama-quantize's "Q4_K" is an alias of Q4_K_M; with --pure every weight is Q4_K either way),
// Q5_K and Q5_K_M -> 17 (MOSTLY_Q5_K_M, likewise), Q6_K -> 18.
uint32_t llama_file_type(QuantizeTarget target);

// llama.cpp's rule for whether a tensor is quantized at all (tensor_allows_quantization): at least
// two dimensions counted as ggml_n_dims does (trailing 1s do not count), a name ending in "weight",
// and none of the excluded kinds (norms, MoE router, position/token-type embeddings, conv and
// RWKV mixing weights, ...). Everything else is copied unchanged.
bool allows_quantization(const gguf::TensorInfo& tensor);

// The type a tensor whose chosen type is `type` gets when its row length ne[0] is not a whole
// number of `type` blocks (llama.cpp's tensor_type_fallback): Q4_K -> Q5_0, Q6_K -> Q8_0 (as
// llama.cpp), Q5_K -> Q8_0 (llama.cpp uses Q5_1, which augur cannot encode or run; Q8_0 is never
// coarser), and F16 when even that does not fit, or for Q8_0/Q4_0/Q5_0 (where llama.cpp gives up
// with "no tensor type fallback"). `type` itself when it fits.
gguf::TensorType with_fallback(const gguf::TensorInfo& tensor, gguf::TensorType type);

// The type `tensor` gets in a pure `target` file: its own type when not allowed, else
// with_fallback(tensor, target).
gguf::TensorType planned_type(const gguf::TensorInfo& tensor, gguf::TensorType target);

// What llama-quantize's mix rules need to know about the model: general.architecture, and the
// "{arch}.block_count" (when absent: 1 + the largest N of the blk.N. tensor names) and
// "{arch}.expert_count" (0 when absent) hyperparameters.
struct MixModel {
  std::string arch;
  int64_t n_layer = 0, n_expert = 0;
};
MixModel mix_model(const gguf::File& input);

// llama.cpp's llama_tensor_get_type for the Q4_K_M / Q5_K_M mixes (target.mix), before the shape
// fallback, for every tensor of `tensors` in output order (the order matters: attn_v and ffn_down
// layers are counted as they come, as llama-quantize does). Tensors that are not allowed keep their
// type. With default D (Q4_K or Q5_K):
// - output.weight, and token_embd.weight when there is no output.weight (tied embeddings): Q6_K,
//   or Q8_0 when ne[0] is not a multiple of 256 or the arch is falcon;
// - attn_v / attn_qkv / attn_kv_b: Q6_K when use_more_bits(i, n) (i-th of n such tensors), where
//   use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2; Q8_0 with 8 experts;
// - attn_k: Q8_0 with 8 experts;
// - ffn_down (i-th, or its layer number with experts, of n_layer): Q6_K when use_more_bits (for
//   falcon Q4_K_M: Q6_K below n_layer/16, Q5_K when use_more_bits, else Q4_K);
// - attn_output: Q5_K for Q4_K_M with 8 experts;
// - everything else (token_embd with an output.weight, attn_q, ffn_up, ffn_gate, ...): D.
// Not reproduced: llama.cpp's bump of attn_v to Q5_K for 70B models (model type from the
// parameter count) and user overrides (--output-tensor-type, --tensor-type, imatrix).
std::vector<gguf::TensorType> mix_types(std::span<const gguf::TensorInfo* const> tensors,
                                        QuantizeTarget target, const MixModel& model);

// One output tensor: where it comes from and what it becomes.
struct TensorPlan {
  const gguf::TensorInfo* source = nullptr;  // owned by the input File
  gguf::TensorType type = gguf::TensorType::F32;
  bool convert = false;   // false: the bytes are copied as they are (type == source->type)
  bool fallback = false;  // allowed, but its shape forced a type other than the rules' choice
};

// The output tensors in llama.cpp's order (llama_model_loader's weights_map: tensors outside
// "blk.N." first, then by layer number, then by name). Throws before anything is written:
// Unsupported when a tensor to convert is already quantized to another type (llama-quantize
// refuses requantization too: it compounds rounding error; quantize from the F16/BF16/F32
// original) or is of a type that is not a float (I8..I64, F64), or the input is one shard of a
// split model.
std::vector<TensorPlan> plan_quantization(const gguf::File& input, QuantizeTarget target);

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
                               QuantizeTarget target, kernels::ThreadPool& pool,
                               const std::function<void(const QuantizeProgress&)>& progress = {},
                               int64_t chunk_elements = kDefaultChunkElements);

}  // namespace augur::model
