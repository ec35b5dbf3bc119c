#include "model/quantize_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <system_error>

#include "common/error.h"
#include "gguf/writer.h"
#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace augur::model {
namespace {

using gguf::TensorType;

constexpr std::array kTargets = {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K,
                                 TensorType::Q6_K};

// ggml's GGML_QNT_VERSION, which llama-quantize stores in general.quantization_version.
constexpr uint32_t kQuantizationVersion = 2;

// Substrings that keep a tensor out of quantization (llama-quant.cpp, tensor_allows_quantization).
constexpr auto kNeverQuantized = std::to_array<std::string_view>({
    "_norm.weight",  // norms
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",  // MoE router and routing table
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",
    "a.rvq.codebook",
    "mm.a.code_embd",
});
// Whole names (llama.cpp's LLM_TENSOR_POS_EMBD and LLM_TENSOR_TOKEN_TYPES).
constexpr std::array<std::string_view, 2> kNeverQuantizedNames = {"position_embd.weight",
                                                                  "token_types.weight"};

bool is_float_type(TensorType type) {
  return type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16;
}

bool is_block_quantized(TensorType type) {
  return gguf::traits(type).block_elems > 1;
}

// ggml_n_dims: trailing dimensions of size 1 do not count.
int ggml_n_dims(const gguf::TensorInfo& t) {
  for (int dim = static_cast<int>(t.ne.size()) - 1; dim >= 1; --dim) {
    if (t.ne[dim] > 1) return dim + 1;
  }
  return 1;
}

// llama_model_loader::weight_name_comparer: the number after "blk." as sscanf reads it (-1 when
// absent), then the name.
int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) layer = -1;
  return layer;
}

std::string targets_list() {
  std::string list;
  for (const auto type : kTargets) {
    if (!list.empty()) list += ", ";
    list += gguf::type_name(type);
  }
  return list;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec) && !ec) return true;
  const auto ca = std::filesystem::weakly_canonical(a, ec);
  if (ec) return false;
  const auto cb = std::filesystem::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

// Converts one planned tensor chunk by chunk: decode rows to f32, encode them, append them.
// The chunk bounds the output buffer and sets how often progress is reported on large tensors.
void convert_tensor(const TensorPlan& plan, gguf::Writer& writer, kernels::ThreadPool& pool,
                    int64_t chunk_elements,
                    const std::function<void(int64_t elements_done)>& on_chunk) {
  const gguf::TensorInfo& src = *plan.source;
  const int64_t cols = src.ne[0];
  const int64_t rows = src.rows();
  const size_t src_row_bytes = gguf::row_bytes(src.type, cols);
  const size_t dst_row_bytes = gguf::row_bytes(plan.type, cols);
  const int64_t rows_per_chunk = std::max<int64_t>(1, chunk_elements / cols);
  std::vector<uint8_t> out(static_cast<size_t>(std::min(rows, rows_per_chunk)) *
                           dst_row_bytes);  // [chunk rows, dst_row_bytes]
  for (int64_t first = 0; first < rows; first += rows_per_chunk) {
    const int64_t n_rows = std::min(rows_per_chunk, rows - first);
    pool.parallel_for(n_rows, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(cols));  // one decoded source row [cols]
      for (int64_t r = begin; r < end; ++r) {
        tensor::dequantize_row(src.type, src.data + (first + r) * src_row_bytes, row.data(), cols);
        tensor::quantize_row(plan.type, row.data(), out.data() + r * dst_row_bytes, cols);
      }
    });
    writer.write_tensor_data(
        src.name,
        std::span<const uint8_t>(out.data(), static_cast<size_t>(n_rows) * dst_row_bytes));
    on_chunk(n_rows * cols);
  }
}

}  // namespace

std::span<const TensorType> quantize_targets() {
  return kTargets;
}

TensorType parse_quantize_target(std::string_view name) {
  const std::string wanted = upper(name);
  for (const auto type : kTargets) {
    if (wanted == gguf::type_name(type)) return type;
  }
  throw InvalidArgument(
      fmt::format("quantize: unknown type '{}': allowed {}", name, targets_list()));
}

uint32_t llama_file_type(TensorType target) {
  switch (target) {
    case TensorType::Q8_0: return 7;   // LLAMA_FTYPE_MOSTLY_Q8_0
    case TensorType::Q4_0: return 2;   // LLAMA_FTYPE_MOSTLY_Q4_0
    case TensorType::Q4_K: return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M ("Q4_K" in llama-quantize)
    case TensorType::Q6_K: return 18;  // LLAMA_FTYPE_MOSTLY_Q6_K
    default: break;
  }
  throw InvalidArgument(fmt::format("quantize: no file type for {}: allowed {}",
                                    gguf::type_name(target), targets_list()));
}

bool allows_quantization(const gguf::TensorInfo& tensor) {
  if (ggml_n_dims(tensor) < 2) return false;
  const std::string_view name = tensor.name;
  if (!name.ends_with("weight")) return false;
  const auto contains = [&](std::string_view part) {
    return name.find(part) != std::string_view::npos;
  };
  if (std::any_of(kNeverQuantized.begin(), kNeverQuantized.end(), contains)) return false;
  return std::find(kNeverQuantizedNames.begin(), kNeverQuantizedNames.end(), name) ==
         kNeverQuantizedNames.end();
}

TensorType planned_type(const gguf::TensorInfo& tensor, TensorType target) {
  if (!allows_quantization(tensor)) return tensor.type;
  const int64_t cols = tensor.ne[0];
  const auto fits = [cols](TensorType type) { return cols % gguf::traits(type).block_elems == 0; };
  if (fits(target)) return target;
  if ((target == TensorType::Q4_K || target == TensorType::Q6_K) && fits(TensorType::Q8_0)) {
    return TensorType::Q8_0;
  }
  return TensorType::F16;
}

std::vector<TensorPlan> plan_quantization(const gguf::File& input, TensorType target) {
  (void)llama_file_type(target);  // rejects types that are no target
  if (const auto count = input.get_int_opt("split.count"); count && *count > 1) {
    throw Unsupported(
        fmt::format("quantize: {} is one of {} split files (split.count); merge them first "
                    "(llama-gguf-split --merge)",
                    input.path(), *count));
  }
  std::vector<TensorPlan> plans;
  plans.reserve(input.tensors().size());
  for (const auto& t : input.tensors()) {
    TensorPlan plan;
    plan.source = &t;
    plan.type = planned_type(t, target);
    plan.convert = plan.type != t.type;
    plan.fallback = allows_quantization(t) && plan.type != target;
    if (plan.convert && !is_float_type(t.type)) {
      if (is_block_quantized(t.type)) {
        throw Unsupported(fmt::format(
            "quantize: tensor '{}' is already quantized ({}); requantizing it to {} would compound "
            "the rounding error, so quantize from the F32/F16/BF16 original instead",
            t.name, gguf::type_name(t.type), gguf::type_name(plan.type)));
      }
      throw Unsupported(
          fmt::format("quantize: tensor '{}' has type {}; only F32, F16 and BF16 tensors can be "
                      "converted to {}",
                      t.name, gguf::type_name(t.type), gguf::type_name(plan.type)));
    }
    plans.push_back(plan);
  }
  std::stable_sort(plans.begin(), plans.end(), [](const TensorPlan& a, const TensorPlan& b) {
    const int la = layer_of(a.source->name), lb = layer_of(b.source->name);
    if (la != lb) return la < lb;
    return a.source->name < b.source->name;
  });
  return plans;
}

QuantizeSummary quantize_model(const gguf::File& input, const std::filesystem::path& output,
                               TensorType target, kernels::ThreadPool& pool,
                               const std::function<void(const QuantizeProgress&)>& progress,
                               int64_t chunk_elements) {
  const std::filesystem::path input_path = input.path();
  if (same_file(input_path, output) || same_file(input_path, output.string() + ".partial")) {
    throw InvalidArgument(
        fmt::format("quantize: output {} is the input file; give another path", output.string()));
  }
  const auto plans = plan_quantization(input, target);

  gguf::Writer writer(output);
  for (const auto& [key, value] : input.metadata()) {
    if (key == "general.quantization_version" || key == "general.file_type" || key == "split.no" ||
        key == "split.count" || key == "split.tensors.count") {
      continue;
    }
    if (key == gguf::Writer::kAlignmentKey) {
      // File accepts any integer width here; the Writer stores it as UINT32, as ggml does.
      writer.set_alignment(static_cast<uint32_t>(value.as_int(key)));
    } else {
      writer.set(key, value);
    }
  }
  writer.set_u32("general.quantization_version", kQuantizationVersion);
  writer.set_u32("general.file_type", llama_file_type(target));

  QuantizeSummary summary;
  int64_t total_elements = 0;
  for (const auto& plan : plans) {
    summary.bytes_out += writer.add_tensor(plan.source->name, plan.type, plan.source->ne);
    summary.bytes_in += plan.source->n_bytes;
    total_elements += plan.source->n_elements();
  }
  writer.write_header();

  int64_t elements_done = 0;
  const auto report = [&](size_t index, const TensorPlan& plan, bool done) {
    if (!progress) return;
    QuantizeProgress p;
    p.tensor = plan.source->name;
    p.index = index + 1;
    p.count = plans.size();
    p.from = plan.source->type;
    p.to = plan.type;
    p.tensor_done = done;
    p.fraction = total_elements > 0 ? static_cast<double>(elements_done) / total_elements : 1.0;
    progress(p);
  };
  for (size_t index = 0; index < plans.size(); ++index) {
    const auto& plan = plans[index];
    if (plan.convert) {
      const int64_t tensor_elements = plan.source->n_elements();
      int64_t tensor_done = 0;
      convert_tensor(plan, writer, pool, chunk_elements, [&](int64_t elements) {
        tensor_done += elements;
        elements_done += elements;
        report(index, plan, tensor_done == tensor_elements);
      });
      ++summary.n_converted;
      if (plan.fallback) ++summary.n_fallback;
    } else {
      writer.write_tensor_data(plan.source->name,
                               std::span<const uint8_t>(plan.source->data, plan.source->n_bytes));
      elements_done += plan.source->n_elements();
      report(index, plan, true);
      ++summary.n_copied;
    }
  }
  writer.finish();
  return summary;
}

}  // namespace augur::model
