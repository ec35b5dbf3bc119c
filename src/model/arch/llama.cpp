// arch "llama": pre-norm decoder, rotary pairs adjacent (NORM), no biases, untied output.
#include "model/blocks/decoder.h"

namespace augur::model {
namespace {

std::unique_ptr<Model> load_llama(std::unique_ptr<gguf::File> file) {
  HParams hp = blocks::read_decoder_hparams(*file, "llama");
  hp.rope_type = RopeType::Norm;
  // llama.cpp's converter already permuted HF q/k weights so that NORM rotation applies.
  blocks::DecoderOptions options;
  options.tied_output = true;  // llama files without output.weight reuse token_embd, as llama.cpp
  return std::make_unique<blocks::Decoder>(std::move(file), std::move(hp), options);
}

AUGUR_REGISTER_ARCH("llama", load_llama);

}  // namespace
}  // namespace augur::model
