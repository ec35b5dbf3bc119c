// arch "gemma3": qwen3-style q/k norms and NEOX RoPE, plus embeddings scaled by sqrt(n_embd),
// post-norms of the attention and FFN outputs, a GELU FFN, tied output, and sliding-window
// attention on most layers (llama.cpp's defaults where converted files leave keys out: every
// sixth layer global, the rest windowed, windowed layers on RoPE base 10000).
#include <fmt/format.h>

#include <cmath>

#include "common/error.h"
#include "model/blocks/decoder.h"

namespace augur::model {
namespace {

constexpr int64_t kDefaultSwaPeriod = 6;
constexpr float kDefaultSwaRopeBase = 10000.0f;

// Which layers use the sliding window: `attention.sliding_window_pattern` as a period n (layer il
// is windowed iff il % n < n - 1; 0 = all) or as one bool per layer; absent = period 6.
std::vector<bool> swa_layers(const gguf::File& file, int64_t n_layer) {
  const std::string key = "gemma3.attention.sliding_window_pattern";
  std::vector<bool> swa(static_cast<size_t>(n_layer));
  const gguf::Value* v = file.find(key);
  if (v && !v->is_integer()) {
    const auto& items = file.get_array(key).items;
    if (static_cast<int64_t>(items.size()) != n_layer) {
      throw FormatError(fmt::format("{}: {} has {} entries for {} layers", file.path(), key,
                                    items.size(), n_layer));
    }
    for (size_t il = 0; il < items.size(); ++il) swa[il] = items[il].as_bool(key);
    return swa;
  }
  const int64_t period = v ? file.get_int(key) : kDefaultSwaPeriod;
  if (period < 0 || period > n_layer + 1) {
    throw FormatError(
        fmt::format("{}: {} is {}, expected 0..{}", file.path(), key, period, n_layer + 1));
  }
  for (int64_t il = 0; il < n_layer; ++il) {
    swa[static_cast<size_t>(il)] = period == 0 || il % period < period - 1;
  }
  return swa;
}

std::unique_ptr<Model> load_gemma3(std::unique_ptr<gguf::File> file) {
  HParams hp = blocks::read_decoder_hparams(*file, "gemma3");
  hp.rope_type = RopeType::Neox;
  const int64_t window = file->get_int_opt("gemma3.attention.sliding_window").value_or(0);
  if (window < 0 || window > hp.n_ctx_train) {
    throw FormatError(fmt::format("{}: gemma3.attention.sliding_window is {}, expected 0..{}",
                                  file->path(), window, hp.n_ctx_train));
  }
  if (window > 0) {
    hp.sliding_window = window;
    hp.swa_layers = swa_layers(*file, hp.n_layer);
    hp.rope_base_swa = static_cast<float>(
        file->get_float_opt("gemma3.rope.freq_base_swa").value_or(kDefaultSwaRopeBase));
  }
  // llama.cpp scales queries by 1/sqrt(n_embd / n_head) for the 62-layer 27B model only.
  const int64_t scale_dim = hp.n_layer == 62 ? hp.n_embd / hp.n_head : hp.head_dim;
  hp.attn_scale = 1.0f / std::sqrt(static_cast<float>(scale_dim));
  blocks::DecoderOptions options;
  options.qk_norm = true;
  options.tied_output = true;
  options.post_norms = true;
  options.scale_embeddings = true;
  options.ffn_activation = blocks::FfnActivation::kGeluTanh;
  return std::make_unique<blocks::Decoder>(std::move(file), std::move(hp), options);
}

AUGUR_REGISTER_ARCH("gemma3", load_gemma3);

}  // namespace
}  // namespace augur::model
