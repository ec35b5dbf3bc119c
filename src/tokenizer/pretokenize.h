// BPE pre-tokenizers: split text into the words that BPE merges run inside, reproducing
// llama.cpp's unicode_regex_split for each regex list its llm_tokenizer_bpe selects. The
// patterns are matched by hand-written scanners over codepoint classes (as llama.cpp itself does
// for the gpt-2, llama3 and kimi-k2 patterns), not by a regex engine, so the behaviour is fixed
// and fast. Which `tokenizer.ggml.pre` name selects which list is vocab.cpp's table; byte-level
// encoding of the words and the merges are bpe.cpp's job.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace augur::tokenizer {

// One value per distinct regex list in llama.cpp (several of its pre types share one). Where a
// list has several regexes, each splits the pieces of the previous one.
enum class PreTokenizer {
  Default,        // [\p{P}\$\+<=>\^~\|]+, then Gpt2, then \p{N}+, then [0-9][0-9][0-9]
  Gpt2,           // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Llama3,         // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
                  //  \s*[\r\n]+|\s+(?!\S)|\s+
  Qwen2,          // as Llama3 with \p{N} one at a time
  Qwen35,         // as Qwen2 with [\p{L}\p{M}]+ words and [^\s\p{L}\p{M}\p{N}]+ punctuation
  Jais2,          // as Llama3, spaces cut as \s{512}(?!\S)|...|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}
  MiniCpm5,       // \p{N}{1,3}, then Llama3 with \p{N}+
  DeepseekLlm,    // [\r\n], \s?[cased letters]+, \s?[punctuation]+, \s+$, [CJK, Hangul]+, \p{N}+
  DeepseekCoder,  // [\r\n], \s?\p{L}+, \s?\p{P}+, [CJK, Hangul]+, \p{N}
  Deepseek3,      // \p{N}{1,3}, [CJK, kana]+, then punctuation-led ASCII words, [\p{L}\p{M}]+
                  //  words, [\p{P}\p{S}]+ runs, whitespace as Llama3
  Spark25,        // as Deepseek3 with [\r\n] alone and no newlines after punctuation, then \p{N}
  Youtu,          // Hangul / CJK punctuation / Bopomofo / CJK runs, then Tekken-like words
  Falcon,         // [\p{P}\$\+<=>\^~\|`]+, then Gpt2, then [0-9][0-9][0-9]
  Starcoder,      // \p{N}, then Gpt2
  Bloom,          //  ?[^(\s|.,!?…。，、।۔،)]+
  Viking,         // Bloom, then \p{N}
  Tekken,         // upper-then-lower-case words, \p{N}, punctuation, whitespace as Llama3
  Chameleon,      // <sentinel:N>, image tokens, tab/newline/space pairs, \p{N}, punctuation, Gpt2
  Gpt4o,          // Tekken with a contraction suffix on words and \p{N}{1,3}
  GraniteMulti,   // Gpt4o with \p{M} counted as a letter
  TinyAya,        // \d{1,3}(?=(?:\d{3})*\b), then Youtu's words with \p{N}{1,3}
  KimiK2,         // llama.cpp's custom Kimi-K2 scanner: Han runs, then Gpt4o-like words
  SuperBpe,       // \p{N}+, then (?=(\d{3})+(?!\d))
  SeedCoder,      // as Qwen2, no newlines after punctuation
  Ufakzeka,       // as Qwen2 without contractions
  Afmoe,          // custom digit groups, [CJK, kana, SE Asian, Hangul]+, then Deepseek3's words
  Laguna,         // [^\n]+|[\n]+, then Qwen2
  ExaoneMoe,      // as Qwen2 with letters joined by single spaces and [\r\n]? after punctuation
};

// The words of `text`, in order; their concatenation is `text` after UTF-8 decoding and
// re-encoding (malformed bytes become U+FFFD, as in llama.cpp). No word is empty.
std::vector<std::string> pretokenize(std::string_view text, PreTokenizer pre);

}  // namespace augur::tokenizer
