// arch "qwen35" (Qwen3.5, dense): a hybrid of Gated DeltaNet layers and, every
// full_attention_interval-th layer, gated full attention (W_q gives [q | gate] per head, per-head
// q/k RMSNorm, NEOX RoPE on the first rope.dimension_count dims, output times sigmoid(gate)).
// Every layer: h = x + Mixer(RMSNorm(x, attn_norm)); x' = h + SwiGLU(RMSNorm(h,
// post_attention_norm)). RoPE is IMROPE, whose sections all see the same position for text
// tokens: that is NEOX rotation, so the sections are only checked.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "common/error.h"
#include "model/blocks/decoder.h"

namespace augur::model {
namespace {

// llama.cpp's default when the key is absent.
constexpr int64_t kDefaultFullAttentionInterval = 4;
// Sane bounds: far above any released model, far below a size that could not be allocated.
constexpr int64_t kMaxConvKernel = 64;
constexpr int64_t kMaxHeadDim = 4096;
constexpr int64_t kMaxRopeSections = 4;

class Keys {
 public:
  explicit Keys(const gguf::File& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(fmt::format("{}: {}", file_.path(), what));
  }
  // `qwen35.<suffix>`: an integer in [min, max]; `fallback` when absent (else an error).
  int64_t count(const std::string& suffix, int64_t min, int64_t max,
                std::optional<int64_t> fallback = std::nullopt) const {
    const std::string key = "qwen35." + suffix;
    const gguf::Value* v = file_.find(key);
    if (!v) {
      if (fallback) return *fallback;
      fail(fmt::format("missing metadata key '{}'", key));
    }
    if (!v->is_integer()) fail(fmt::format("{} is not an integer", key));
    const int64_t n = v->as_int(key);
    if (n < min || n > max) fail(fmt::format("{} is {}, expected {}..{}", key, n, min, max));
    return n;
  }
  // rope.dimension_sections: llama.cpp requires it (up to 4 non-negative counts).
  void check_rope_sections() const {
    const std::string key = "qwen35.rope.dimension_sections";
    const gguf::Value* v = file_.find(key);
    if (!v) fail(fmt::format("missing metadata key '{}'", key));
    const auto* array = std::get_if<gguf::Array>(&v->data);
    if (!array || array->items.empty() ||
        static_cast<int64_t>(array->items.size()) > kMaxRopeSections) {
      fail(fmt::format("{} is not an array of 1..{} integers", key, kMaxRopeSections));
    }
    for (const auto& item : array->items) {
      if (!item.is_integer() || item.as_int(key) < 0) {
        fail(fmt::format("{} holds a value that is not a non-negative integer", key));
      }
    }
  }

 private:
  const gguf::File& file_;
};

std::unique_ptr<Model> load_qwen35(std::unique_ptr<gguf::File> file) {
  const Keys keys(*file);
  blocks::LayerHints hints;
  hints.gated_query = true;
  hints.recurrent_layers = [&](int64_t n_layer) {
    const int64_t interval = keys.count("full_attention_interval", 1, std::max<int64_t>(1, n_layer),
                                        kDefaultFullAttentionInterval);
    std::vector<bool> recurrent(static_cast<size_t>(n_layer));
    for (int64_t il = 0; il < n_layer; ++il) recurrent[il] = (il + 1) % interval != 0;
    return recurrent;
  };
  HParams hp = blocks::read_decoder_hparams(*file, "qwen35", hints);
  hp.rope_type = RopeType::Neox;
  keys.check_rope_sections();

  blocks::DecoderOptions options;
  options.qk_norm = true;
  options.attn_output_gate = true;
  options.ffn_norm = "post_attention_norm";
  blocks::GatedDeltaNetShape& dn = options.deltanet;
  dn.n_embd = hp.n_embd;
  dn.eps = hp.rms_eps;
  dn.conv_kernel = keys.count("ssm.conv_kernel", 1, kMaxConvKernel);
  dn.head_k_dim = keys.count("ssm.state_size", 1, kMaxHeadDim);
  dn.n_k_heads = keys.count("ssm.group_count", 1, hp.n_embd);
  dn.n_v_heads = keys.count("ssm.time_step_rank", 1, hp.n_embd);
  const int64_t inner = keys.count("ssm.inner_size", 1, kMaxHeadDim * dn.n_v_heads);
  if (inner % dn.n_v_heads != 0) {
    keys.fail(
        fmt::format("qwen35.ssm.inner_size {} is not a multiple of qwen35.ssm.time_step_rank "
                    "{}",
                    inner, dn.n_v_heads));
  }
  if (dn.n_v_heads % dn.n_k_heads != 0) {
    keys.fail(
        fmt::format("qwen35.ssm.time_step_rank {} is not a multiple of "
                    "qwen35.ssm.group_count {}",
                    dn.n_v_heads, dn.n_k_heads));
  }
  dn.head_v_dim = inner / dn.n_v_heads;
  // The tensors (checked before the cache is sized by state_floats) bound these counts by the
  // file's size: every layer's weights are loaded, shapes checked, in the Decoder.
  return std::make_unique<blocks::Decoder>(std::move(file), std::move(hp), options);
}

AUGUR_REGISTER_ARCH("qwen35", load_qwen35);

}  // namespace
}  // namespace augur::model
