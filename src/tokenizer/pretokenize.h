// BPE pre-tokenizers: split text into the words that BPE merges run inside, reproducing
// llama.cpp's unicode_regex_split for each supported `tokenizer.ggml.pre`. The patterns are
// matched by hand-written scanners over codepoint classes (as llama.cpp itself does for the
// gpt-2 and llama3 patterns), not by a regex engine, so the behaviour is fixed and fast.
// Byte-level encoding of the words and the merges are bpe.cpp's job.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace augur::tokenizer {

enum class PreTokenizer {
  Gpt2,     // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Llama3,   // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
            //  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Qwen2,    // as Llama3 but \p{N} one digit at a time
  Default,  // llama.cpp's fallback for BPE: [\p{P}\$\+<=>\^~\|]+, then Gpt2, then \p{N}+,
            // then [0-9][0-9][0-9], each splitting the pieces of the previous one
};

// The words of `text`, in order; their concatenation is `text` after UTF-8 decoding and
// re-encoding (malformed bytes become U+FFFD, as in llama.cpp). No word is empty.
std::vector<std::string> pretokenize(std::string_view text, PreTokenizer pre);

}  // namespace augur::tokenizer
