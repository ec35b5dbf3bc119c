#include "tokenizer/pre_specs.h"

#include <algorithm>
#include <array>

namespace augur::tokenizer {

namespace {

using P = PreTokenizer;
constexpr bool kClean = true, kKeepSpaces = false;  // clean_spaces
constexpr bool kIgnoreMerges = true;
constexpr bool kAddBos = true;

// In llama.cpp's order. A BPE vocabulary cleans spaces unless its branch turns it off; the
// pre types that share one regex list map to one PreTokenizer (e.g. mpt, olmo, jais -> Gpt2).
constexpr std::array kPreSpecs = {
    PreSpec{"default", P::Default, kClean, false, false},
    PreSpec{"minicpm5", P::MiniCpm5, kClean, kIgnoreMerges, false},
    PreSpec{"llama3", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"llama-v3", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"llama-bpe", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"falcon3", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"falcon-h1", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"pixtral", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"midm-2.0", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"lfm2", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"jina-v5-nano", P::Llama3, kClean, kIgnoreMerges, kAddBos},
    PreSpec{"deepseek-llm", P::DeepseekLlm, kKeepSpaces, false, false},
    PreSpec{"deepseek-coder", P::DeepseekCoder, kKeepSpaces, false, false},
    PreSpec{"deepseek-v3", P::Deepseek3, kKeepSpaces, false, false},
    PreSpec{"spark2_5", P::Spark25, kKeepSpaces, false, false},
    PreSpec{"youtu", P::Youtu, kKeepSpaces, kIgnoreMerges, false},
    PreSpec{"falcon", P::Falcon, kClean, false, false},
    PreSpec{"mpt", P::Gpt2, kClean, false, false},
    PreSpec{"starcoder", P::Starcoder, kClean, false, false},
    PreSpec{"gpt-2", P::Gpt2, kClean, false, false},
    PreSpec{"phi-2", P::Gpt2, kClean, false, false},
    PreSpec{"jina-es", P::Gpt2, kClean, false, false},
    PreSpec{"jina-de", P::Gpt2, kClean, false, false},
    PreSpec{"gigachat", P::Gpt2, kClean, false, false},
    PreSpec{"jina-v2-es", P::Gpt2, kClean, false, false},
    PreSpec{"jina-v2-de", P::Gpt2, kClean, false, false},
    PreSpec{"a.x-4.0", P::Gpt2, kClean, false, false},
    PreSpec{"mellum", P::Gpt2, kClean, false, false},
    PreSpec{"modern-bert", P::Gpt2, kClean, false, false},
    PreSpec{"jais-2", P::Jais2, kClean, false, false},
    // llama.cpp also sets add_sep for these three; its BPE encode never appends SEP.
    PreSpec{"jina-v1-en", P::Gpt2, kClean, false, false},
    PreSpec{"jina-v2-code", P::Gpt2, kClean, false, false},
    PreSpec{"roberta-bpe", P::Gpt2, kClean, false, false},
    PreSpec{"refact", P::Starcoder, kClean, false, false},
    PreSpec{"command-r", P::Starcoder, kKeepSpaces, false, false},
    PreSpec{"qwen2", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"deepseek-r1-qwen", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"kormo", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"f2llmv2", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"qwen35", P::Qwen35, kKeepSpaces, false, false},
    PreSpec{"stablelm2", P::Qwen2, kClean, false, false},
    PreSpec{"olmo", P::Gpt2, kClean, false, false},
    PreSpec{"dbrx", P::Llama3, kClean, false, false},
    PreSpec{"smaug-bpe", P::Llama3, kClean, false, false},
    PreSpec{"poro-chat", P::Bloom, kKeepSpaces, false, false},
    // llama.cpp clears the default BOS id for these; augur's BPE default is "none" already.
    PreSpec{"glm4", P::Llama3, kClean, false, false},
    PreSpec{"chatglm-bpe", P::Llama3, kClean, false, false},
    PreSpec{"viking", P::Viking, kKeepSpaces, false, false},
    PreSpec{"jais", P::Gpt2, kClean, false, false},
    PreSpec{"tekken", P::Tekken, kKeepSpaces, kIgnoreMerges, kAddBos},
    PreSpec{"smollm", P::Starcoder, kKeepSpaces, false, false},
    PreSpec{"codeshell", P::Starcoder, kClean, false, false},
    PreSpec{"bloom", P::Bloom, kClean, false, false},
    PreSpec{"gpt3-finnish", P::Bloom, kClean, false, false},
    PreSpec{"exaone", P::Starcoder, kClean, false, false},
    PreSpec{"exaone4", P::Gpt2, kClean, false, false},
    PreSpec{"exaone-moe", P::ExaoneMoe, kClean, false, false},
    PreSpec{"chameleon", P::Chameleon, kKeepSpaces, false, kAddBos},
    PreSpec{"minerva-7b", P::Starcoder, kClean, false, false},
    PreSpec{"megrez", P::Qwen2, kClean, false, false},
    PreSpec{"gpt-4o", P::Gpt4o, kKeepSpaces, false, false},
    PreSpec{"llama4", P::Gpt4o, kKeepSpaces, false, false},
    PreSpec{"kanana2", P::Gpt4o, kKeepSpaces, false, false},
    PreSpec{"talkie", P::Gpt4o, kKeepSpaces, false, false},
    PreSpec{"granite-embed-multi-97m", P::GraniteMulti, kKeepSpaces, kIgnoreMerges, false},
    PreSpec{"tiny_aya", P::TinyAya, kKeepSpaces, false, false},
    PreSpec{"cohere2moe", P::TinyAya, kKeepSpaces, false, false},
    PreSpec{"superbpe", P::SuperBpe, kKeepSpaces, false, false},
    PreSpec{"trillion", P::Gpt2, kKeepSpaces, false, false},
    PreSpec{"granite-docling", P::Gpt2, kKeepSpaces, false, false},
    // Bailing's regex ends newline runs with \s*[\r\n], which splits exactly as Qwen2's
    // \s*[\r\n]+ (the \s* backtracks to the last newline of the run either way).
    PreSpec{"bailingmoe", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"bailingmoe2", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"llada-moe", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"seed-coder", P::SeedCoder, kKeepSpaces, false, false},
    PreSpec{"hunyuan", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"hunyuan-dense", P::Deepseek3, kKeepSpaces, false, false},
    PreSpec{"hy_v4", P::Deepseek3, kKeepSpaces, false, false},
    PreSpec{"joyai-llm", P::Deepseek3, kKeepSpaces, false, false},
    PreSpec{"kimi-k2", P::KimiK2, kKeepSpaces, false, false},
    PreSpec{"ufakzeka", P::Ufakzeka, kKeepSpaces, false, false},
    PreSpec{"grok-2", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"afmoe", P::Afmoe, kKeepSpaces, false, false},
    PreSpec{"laguna", P::Laguna, kKeepSpaces, false, false},
    PreSpec{"minimax-m2", P::Gpt4o, kKeepSpaces, false, false},
    PreSpec{"solar-open", P::Qwen2, kKeepSpaces, false, false},
    PreSpec{"mellum2", P::Starcoder, kClean, false, false},
};

}  // namespace

const PreSpec* find_pre_spec(std::string_view name) {
  const auto it = std::find_if(kPreSpecs.begin(), kPreSpecs.end(),
                               [&](const PreSpec& spec) { return spec.name == name; });
  return it == kPreSpecs.end() ? nullptr : &*it;
}

std::string supported_pre_names() {
  std::string names;
  for (const auto& spec : kPreSpecs) names += (names.empty() ? "" : ", ") + std::string(spec.name);
  return names;
}

std::string_view unsupported_pre_reason(std::string_view name) {
  if (name == "gemma4" || name == "granite-embed-multi-311m" || name == "sarvam-moe") {
    return "it is SentencePiece-style BPE (spaces escaped as U+2581, merges on raw UTF-8, "
           "<0xXX> byte tokens), which augur does not implement";
  }
  if (name == "whitespace") {
    return "its whitespace-split words on raw UTF-8 (no byte-level encoding) are not "
           "implemented";
  }
  return "";
}

}  // namespace augur::tokenizer
