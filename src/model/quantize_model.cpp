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

const std::array<QuantizeTarget, 8> kTargets = {
    QuantizeTarget(TensorType::Q8_0),       QuantizeTarget(TensorType::Q4_0),
    QuantizeTarget(TensorType::Q5_0),       QuantizeTarget(TensorType::Q4_K),
    QuantizeTarget(TensorType::Q5_K),       QuantizeTarget(TensorType::Q6_K),
    QuantizeTarget(TensorType::Q4_K, true), QuantizeTarget(TensorType::Q5_K, true)};

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
  for (const auto& target : kTargets) {
    if (!list.empty()) list += ", ";
    list += target.name();
  }
  return list;
}

// llama-quant.cpp's tensor categories, by name.
enum class Category { kTokenEmbd, kOutput, kAttnV, kAttnK, kAttnQ, kAttnOutput, kFfnDown, kOther };

Category category_of(std::string_view name) {
  const auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
    return Category::kTokenEmbd;
  }
  // attn_qkv and attn_kv_b are treated as attn_v by every rule the K-quant mixes use.
  if (has("attn_qkv.weight") || has("attn_kv_b.weight") || has("attn_v.weight")) {
    return Category::kAttnV;
  }
  if (has("attn_k.weight")) return Category::kAttnK;
  if (has("attn_q.weight")) return Category::kAttnQ;
  if (has("attn_output.weight")) return Category::kAttnOutput;
  if (has("ffn_up") || has("ffn_gate")) return Category::kOther;  // no rule for these mixes
  if (has("ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

bool use_more_bits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
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

std::string QuantizeTarget::name() const {
  return std::string(gguf::type_name(type)) + (mix ? "_M" : "");
}

std::span<const QuantizeTarget> quantize_targets() {
  return kTargets;
}

QuantizeTarget parse_quantize_target(std::string_view name) {
  const std::string wanted = upper(name);
  for (const auto& target : kTargets) {
    if (wanted == target.name()) return target;
  }
  throw InvalidArgument(
      fmt::format("quantize: unknown type '{}': allowed {}", name, targets_list()));
}

uint32_t llama_file_type(QuantizeTarget target) {
  if (std::find(kTargets.begin(), kTargets.end(), target) != kTargets.end()) {
    switch (target.type) {
      case TensorType::Q8_0: return 7;   // LLAMA_FTYPE_MOSTLY_Q8_0
      case TensorType::Q4_0: return 2;   // LLAMA_FTYPE_MOSTLY_Q4_0
      case TensorType::Q5_0: return 8;   // LLAMA_FTYPE_MOSTLY_Q5_0
      case TensorType::Q4_K: return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M ("Q4_K" in llama-quantize)
      case TensorType::Q5_K: return 17;  // LLAMA_FTYPE_MOSTLY_Q5_K_M ("Q5_K" in llama-quantize)
      case TensorType::Q6_K: return 18;  // LLAMA_FTYPE_MOSTLY_Q6_K
      default: break;
    }
  }
  throw InvalidArgument(
      fmt::format("quantize: no file type for {}: allowed {}", target.name(), targets_list()));
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

TensorType with_fallback(const gguf::TensorInfo& tensor, TensorType type) {
  const int64_t cols = tensor.ne.empty() ? 1 : tensor.ne[0];
  const auto fits = [cols](TensorType t) { return cols % gguf::traits(t).block_elems == 0; };
  if (fits(type)) return type;
  TensorType fallback = TensorType::F16;
  if (type == TensorType::Q4_K) fallback = TensorType::Q5_0;
  if (type == TensorType::Q5_K || type == TensorType::Q6_K) fallback = TensorType::Q8_0;
  return fits(fallback) ? fallback : TensorType::F16;
}

TensorType planned_type(const gguf::TensorInfo& tensor, TensorType target) {
  if (!allows_quantization(tensor)) return tensor.type;
  return with_fallback(tensor, target);
}

MixModel mix_model(const gguf::File& input) {
  MixModel m;
  m.arch = std::string(input.get_string_opt("general.architecture").value_or(""));
  m.n_layer = input.get_int_opt(m.arch + ".block_count").value_or(0);
  m.n_expert = input.get_int_opt(m.arch + ".expert_count").value_or(0);
  if (m.n_layer == 0) {  // no hyperparameter: the layers the tensor names show
    for (const auto& t : input.tensors())
      m.n_layer = std::max<int64_t>(m.n_layer, layer_of(t.name) + 1);
  }
  return m;
}

std::vector<TensorType> mix_types(std::span<const gguf::TensorInfo* const> tensors,
                                  QuantizeTarget target, const MixModel& model) {
  const TensorType base = target.type;
  const bool q4_k_m = base == TensorType::Q4_K, falcon = model.arch == "falcon";
  const bool tied = std::none_of(tensors.begin(), tensors.end(), [](const gguf::TensorInfo* t) {
    return category_of(t->name) == Category::kOutput;
  });
  const int64_t n_attn_v = std::count_if(tensors.begin(), tensors.end(), [](const auto* t) {
    return category_of(t->name) == Category::kAttnV;
  });
  const int64_t n_layer = model.n_layer, n_expert = std::max<int64_t>(1, model.n_expert);
  int64_t i_attn_v = 0, i_ffn_down = 0;
  std::vector<TensorType> types;
  types.reserve(tensors.size());
  for (const gguf::TensorInfo* t : tensors) {
    if (!allows_quantization(*t)) {
      types.push_back(t->type);
      continue;
    }
    TensorType type = base;
    const Category category = category_of(t->name);
    if (!target.mix) {
      types.push_back(type);
      continue;
    }
    if (category == Category::kOutput || (tied && category == Category::kTokenEmbd)) {
      type = falcon || t->ne[0] % gguf::traits(base).block_elems != 0 ? TensorType::Q8_0
                                                                      : TensorType::Q6_K;
    } else if (category == Category::kAttnV) {
      if (use_more_bits(i_attn_v, n_attn_v)) type = TensorType::Q6_K;
      if (model.n_expert == 8) type = TensorType::Q8_0;
      ++i_attn_v;
    } else if (category == Category::kAttnK) {
      if (model.n_expert == 8) type = TensorType::Q8_0;
    } else if (category == Category::kFfnDown) {
      int64_t i_layer = i_ffn_down;
      if (n_expert > 1) {
        int layer = -1;
        if (std::sscanf(t->name.c_str(), "blk.%d.", &layer) != 1 || layer < 0 || layer >= n_layer) {
          throw FormatError(fmt::format(
              "quantize: cannot tell the layer of tensor '{}' (of {} layers)", t->name, n_layer));
        }
        i_layer = layer;
      }
      if (q4_k_m && falcon) {
        type = i_layer < n_layer / 16            ? TensorType::Q6_K
               : use_more_bits(i_layer, n_layer) ? TensorType::Q5_K
                                                 : TensorType::Q4_K;
      } else if (use_more_bits(i_layer, n_layer)) {
        type = TensorType::Q6_K;
      }
      ++i_ffn_down;
    } else if (category == Category::kAttnOutput) {
      if (!falcon && model.n_expert == 8 && q4_k_m) type = TensorType::Q5_K;
    }
    types.push_back(type);
  }
  return types;
}

std::vector<TensorPlan> plan_quantization(const gguf::File& input, QuantizeTarget target) {
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
    plans.push_back(plan);
  }
  // llama-quantize's order, which is also the order its mix rules count layers in.
  std::stable_sort(plans.begin(), plans.end(), [](const TensorPlan& a, const TensorPlan& b) {
    const int la = layer_of(a.source->name), lb = layer_of(b.source->name);
    if (la != lb) return la < lb;
    return a.source->name < b.source->name;
  });
  std::vector<const gguf::TensorInfo*> ordered;
  ordered.reserve(plans.size());
  for (const auto& plan : plans) ordered.push_back(plan.source);
  const auto chosen = mix_types(ordered, target, mix_model(input));
  for (size_t i = 0; i < plans.size(); ++i) {
    TensorPlan& plan = plans[i];
    const gguf::TensorInfo& t = *plan.source;
    const bool allowed = allows_quantization(t);
    plan.type = allowed ? with_fallback(t, chosen[i]) : t.type;
    plan.convert = plan.type != t.type;
    plan.fallback = allowed && plan.type != chosen[i];
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
  }
  return plans;
}

QuantizeSummary quantize_model(const gguf::File& input, const std::filesystem::path& output,
                               QuantizeTarget target, kernels::ThreadPool& pool,
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
