// Internal to the pre-tokenizers: the fragment a split stage works on, and the driver that
// turns a pattern (ordered alternatives, each giving its match length at a position) into
// words with the semantics of llama.cpp's unicode_regex_split. The stages themselves live in
// word_patterns.cpp (the \p{L}/\p{N}/punctuation/whitespace word patterns) and
// script_patterns.cpp (character ranges, digit grouping and the small single-purpose patterns).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tokenizer/unicode.h"

namespace augur::tokenizer::split {

constexpr uint32_t kOutOfRange = 0xFFFFFFFF;

// The codepoints of the whole text with their classes, computed once.
struct Text {
  std::vector<uint32_t> cpts;
  std::vector<unicode::CodepointClass> classes;
};

// One fragment [begin, end) of the text being split further. Positions outside the fragment
// read as "no codepoint", so a pattern never looks across a fragment boundary (llama.cpp runs
// each regex on each piece of the previous one separately).
class Fragment {
 public:
  Fragment(const Text& text, size_t begin, size_t end, std::vector<size_t>& lengths)
      : text_(text), begin_(begin), end_(end), prev_end_(begin), lengths_(lengths) {}

  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  bool inside(size_t pos) const { return pos >= begin_ && pos < end_; }
  uint32_t cpt(size_t pos) const { return inside(pos) ? text_.cpts[pos] : kOutOfRange; }
  unicode::CodepointClass cls(size_t pos) const {
    return inside(pos) ? text_.classes[pos] : unicode::CodepointClass{};
  }
  bool letter(size_t pos) const { return cls(pos).letter; }
  bool number(size_t pos) const { return cls(pos).number; }
  bool whitespace(size_t pos) const { return cls(pos).whitespace; }
  bool mark(size_t pos) const { return cls(pos).mark; }
  bool punctuation(size_t pos) const { return cls(pos).punctuation; }
  // \p{S} as llama.cpp's collapsed regexes see it: its ASCII list for \p{S} ($+<=>^`|) omits
  // '~', so '~' is in no category there.
  bool symbol(size_t pos) const { return cls(pos).symbol && cpt(pos) != '~'; }
  bool newline(size_t pos) const { return cpt(pos) == '\r' || cpt(pos) == '\n'; }
  bool ascii_digit(size_t pos) const { return cpt(pos) >= '0' && cpt(pos) <= '9'; }
  // [^\s\p{L}\p{N}] and inside the fragment.
  bool other(size_t pos) const {
    const auto c = cls(pos);
    return inside(pos) && !(c.whitespace || c.letter || c.number);
  }
  // The codepoint as llama.cpp's std::wregex patterns see it: non-ASCII whitespace becomes
  // U+000B, so \s matches it and no character range does (U+3000 is in none of them).
  uint32_t wide(size_t pos) const {
    const uint32_t c = cpt(pos);
    return c > 0x7F && c != kOutOfRange && whitespace(pos) ? 0x0B : c;
  }

  // Codepoints from `pos` while `in_class` holds, at most `limit` (a bounded quantifier must not
  // count a whole long run at each of its matches).
  template <class Pred>
  size_t run(size_t pos, Pred in_class, size_t limit = SIZE_MAX) const {
    size_t n = 0;
    while (n < limit && inside(pos + n) && in_class(pos + n)) ++n;
    return n;
  }

  // Ends the current word at `end` (skipping empty words).
  void cut(size_t end) {
    if (end > prev_end_) lengths_.push_back(end - prev_end_);
    prev_end_ = end;
  }

 private:
  const Text& text_;
  size_t begin_, end_, prev_end_;
  std::vector<size_t>& lengths_;
};

// A pattern's match at a position: its length, or nullopt. Zero-length matches are not used:
// only SuperBPE's lookahead has them and it has a stage of its own.
using Match = std::optional<size_t>;

// std::regex_iterator over the fragment, as llama.cpp's unicode_regex_split_stl uses it: the
// leftmost match wins and the search resumes after it; the text between two matches becomes
// one word. `match_at(pos)` returns the pattern's match starting exactly at `pos`.
template <class MatchAt>
void split_matches(Fragment& f, MatchAt match_at) {
  for (size_t pos = f.begin(); pos < f.end();) {
    if (const Match n = match_at(pos); n && *n > 0) {
      f.cut(pos);
      pos += *n;
      f.cut(pos);
    } else {
      ++pos;
    }
  }
  f.cut(f.end());
}

// A split stage: splits one fragment (each stage runs over every piece of the previous one).
using Stage = void (*)(Fragment&);

// ---- word_patterns.cpp -------------------------------------------------------------------

void gpt2_words(
    Fragment& f);  // GPT-2: 's|'t|...| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void llama3_words(Fragment& f);         // Llama 3: \p{N}{1,3}, case-folded contractions
void qwen2_words(Fragment& f);          // as llama3_words, \p{N} one at a time
void qwen35_words(Fragment& f);         // as qwen2_words, [\p{L}\p{M}]+ words
void jais2_words(Fragment& f);          // as llama3_words, spaces cut in powers of two
void minicpm5_words(Fragment& f);       // as llama3_words, \p{N}+
void seed_coder_words(Fragment& f);     // as qwen2_words, punctuation keeps no newline
void ufakzeka_words(Fragment& f);       // as qwen2_words without contractions
void exaone_moe_words(Fragment& f);     // letters joined by single spaces, [\r\n]? after punct
void tekken_words(Fragment& f);         // upper/lower-case words, \p{N} one at a time
void gpt4o_words(Fragment& f);          // tekken_words + contraction suffix, \p{N}{1,3}
void granite_multi_words(Fragment& f);  // gpt4o_words counting \p{M} as letters
void youtu_words(Fragment& f);          // [\p{L}\p{M}]+ words + contraction suffix, \p{N}
void tiny_aya_words(Fragment& f);       // youtu_words with \p{N}{1,3}
void kimi_k2_words(Fragment& f);        // Han runs, then gpt4o-like words without Han
void deepseek3_words(Fragment& f);      // DeepSeek V3: punctuation-led ASCII words, \p{P}\p{S}
void spark_words(Fragment& f);          // deepseek3_words, newlines one at a time

// ---- script_patterns.cpp -----------------------------------------------------------------

void each_newline(Fragment& f);          // [\r\n]
void deepseek_latin_words(Fragment& f);  // \s?[A-Za-zµÀ-ÖØ-ö...]+ (cased letters)
void deepseek_punctuation(Fragment& f);  // \s?[!-/:-~！-／：-～‘-‟　-。]+
void trailing_whitespace(Fragment& f);   // \s+$
void deepseek_cjk(Fragment& f);          // [一-龥ࠀ-一가-퟿]+
void cjk_kana(Fragment& f);              // [一-龥぀-ゟ゠-ヿ]+
void youtu_scripts(Fragment& f);         // Hangul, CJK punctuation, Bopomofo, CJK and kana runs
void afmoe_scripts(Fragment& f);         // CJK, kana, Thai, Lao, Khmer, Myanmar, Hangul runs
void letter_words(Fragment& f);          // \s?\p{L}+
void punctuation_words(Fragment& f);     // \s?\p{P}+
void number_runs(Fragment& f);           // \p{N}+
void each_number(Fragment& f);           // \p{N}
void number_triples(Fragment& f);        // \p{N}{1,3}
void ascii_digit_triples(Fragment& f);   // [0-9][0-9][0-9]
void digits_grouped_from_right(Fragment& f);  // tiny_aya's \d{1,3}(?=(?:\d{3})*\b)
void superbpe_digits(Fragment& f);            // (?=(\d{3})+(?!\d)): cuts before each triple
void afmoe_digits(Fragment& f);               // llama.cpp's custom AFMoE digit split
void default_punctuation(Fragment& f);        // [\p{P}\$\+<=>\^~\|]+
void falcon_punctuation(Fragment& f);         // [\p{P}\$\+<=>\^~\|`]+
void bloom_words(Fragment& f);                //  ?[^(\s|.,!?…。，、।۔،)]+
void newline_runs(Fragment& f);               // [^\n]+|[\n]+
void chameleon_sentinels(Fragment& f);        // <sentinel:[0-9]+>
void chameleon_images(Fragment& f);           // (IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z
void chameleon_spacing(Fragment& f);          // ([\t\n]|    |  )
void chameleon_punctuation(Fragment& f);      // [\p{P}!-/:-@\[-`{-~]

}  // namespace augur::tokenizer::split
