// SentencePiece-style tokenizing of one text fragment (tokenizer.ggml.model = "llama"):
// llama.cpp's llm_tokenizer_spm_session. Start from UTF-8 characters, repeatedly merge the
// adjacent pair whose concatenation is the highest-scoring vocabulary token (ties: leftmost),
// then emit each piece, falling back to <0xXX> byte tokens for pieces not in the vocabulary.
// Space escaping (' ' -> U+2581) and the space prefix are the caller's job (tokenizer.cpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace augur::tokenizer {

// Appends the ids of `text` (already escaped) to `out`.
void spm_tokenize(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

}  // namespace augur::tokenizer
