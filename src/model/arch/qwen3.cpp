// arch "qwen3": per-head RMSNorm of q and k before RoPE, explicit head_dim, NEOX, no biases.
#include "model/blocks/decoder.h"

namespace augur::model {
namespace {

std::unique_ptr<Model> load_qwen3(std::unique_ptr<gguf::File> file) {
  HParams hp = blocks::read_decoder_hparams(*file, "qwen3");
  hp.rope_type = RopeType::Neox;
  blocks::DecoderOptions options;
  options.qk_norm = true;
  options.tied_output = true;
  return std::make_unique<blocks::Decoder>(std::move(file), std::move(hp), options);
}

AUGUR_REGISTER_ARCH("qwen3", load_qwen3);

}  // namespace
}  // namespace augur::model
