// arch "qwen3moe": qwen3's attention (per-head q/k RMSNorm before RoPE, explicit head_dim, NEOX,
// no biases) with a mixture-of-experts FFN in every block (blocks/moe.h: softmax router, top-k
// experts, weights renormalised over the chosen ones).
#include "model/blocks/decoder.h"

namespace augur::model {
namespace {

std::unique_ptr<Model> load_qwen3moe(std::unique_ptr<gguf::File> file) {
  HParams hp = blocks::read_decoder_hparams(*file, "qwen3moe", {.moe = true});
  hp.rope_type = RopeType::Neox;
  blocks::DecoderOptions options;
  options.qk_norm = true;
  options.tied_output = true;
  options.moe = true;
  return std::make_unique<blocks::Decoder>(std::move(file), std::move(hp), options);
}

AUGUR_REGISTER_ARCH("qwen3moe", load_qwen3moe);

}  // namespace
}  // namespace augur::model
