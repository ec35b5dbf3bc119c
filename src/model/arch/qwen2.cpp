// arch "qwen2": llama block with q/k/v biases, NEOX rotation, embeddings usually tied.
#include "model/blocks/decoder.h"

namespace augur::model {
namespace {

std::unique_ptr<Model> load_qwen2(std::unique_ptr<gguf::File> file) {
  HParams hp = blocks::read_decoder_hparams(*file, "qwen2");
  hp.rope_type = RopeType::Neox;
  blocks::DecoderOptions options;
  options.qkv_bias = true;
  options.tied_output = true;
  return std::make_unique<blocks::Decoder>(std::move(file), std::move(hp), options);
}

AUGUR_REGISTER_ARCH("qwen2", load_qwen2);

}  // namespace
}  // namespace augur::model
