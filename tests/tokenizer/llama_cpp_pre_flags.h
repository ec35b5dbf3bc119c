// Test data: the tokenizer.ggml.pre names whose branch in llama.cpp's llama_vocab::impl::load
// turns clean_spaces off, or sets ignore_merges / add_bos (every other BPE name cleans spaces
// and sets neither). Written out from llama.cpp, independently of src/tokenizer/pre_specs.cpp.
#pragma once

#include <set>
#include <string_view>

namespace augur::tokenizer::testing {

inline const std::set<std::string_view> kKeepSpaces = {"deepseek-llm",
                                                       "deepseek-coder",
                                                       "deepseek-v3",
                                                       "spark2_5",
                                                       "youtu",
                                                       "command-r",
                                                       "qwen2",
                                                       "deepseek-r1-qwen",
                                                       "kormo",
                                                       "f2llmv2",
                                                       "qwen35",
                                                       "poro-chat",
                                                       "viking",
                                                       "tekken",
                                                       "smollm",
                                                       "chameleon",
                                                       "gpt-4o",
                                                       "llama4",
                                                       "kanana2",
                                                       "talkie",
                                                       "granite-embed-multi-97m",
                                                       "tiny_aya",
                                                       "cohere2moe",
                                                       "superbpe",
                                                       "trillion",
                                                       "granite-docling",
                                                       "bailingmoe",
                                                       "bailingmoe2",
                                                       "llada-moe",
                                                       "seed-coder",
                                                       "hunyuan",
                                                       "hunyuan-dense",
                                                       "hy_v4",
                                                       "joyai-llm",
                                                       "kimi-k2",
                                                       "ufakzeka",
                                                       "grok-2",
                                                       "afmoe",
                                                       "laguna",
                                                       "minimax-m2",
                                                       "solar-open"};
inline const std::set<std::string_view> kIgnoreMerges = {"minicpm5",
                                                         "llama3",
                                                         "llama-v3",
                                                         "llama-bpe",
                                                         "falcon3",
                                                         "falcon-h1",
                                                         "pixtral",
                                                         "midm-2.0",
                                                         "lfm2",
                                                         "jina-v5-nano",
                                                         "youtu",
                                                         "tekken",
                                                         "granite-embed-multi-97m"};
inline const std::set<std::string_view> kAddBos = {
    "llama3",   "llama-v3", "llama-bpe",    "falcon3", "falcon-h1", "pixtral",
    "midm-2.0", "lfm2",     "jina-v5-nano", "tekken",  "chameleon"};

}  // namespace augur::tokenizer::testing
