// Unicode helpers the tokenizers share: UTF-8 decoding the way llama.cpp does it (a malformed
// byte becomes U+FFFD and consumes one byte), codepoint classes for the pre-tokenizers, the
// GPT-2 byte <-> unicode table, and UTF-8 completeness for streaming.
// Does not own any vocabulary knowledge; see vocab.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace augur::tokenizer::unicode {

constexpr uint32_t kReplacement = 0xFFFD;

// Bytes in the sequence a lead byte starts, from its high nibble only (llama.cpp's
// unicode_len_utf8): 0x00-0xBF -> 1, 0xC0-0xDF -> 2, 0xE0-0xEF -> 3, 0xF0-0xFF -> 4.
size_t sequence_length(uint8_t lead);

// Decodes `text` into codepoints. Structure is checked (continuation bytes present) but overlong
// forms are accepted, as in llama.cpp; a byte that cannot start a sequence, a truncated
// sequence or a value past U+10FFFF yields U+FFFD and consumes one byte.
std::vector<uint32_t> decode_utf8(std::string_view text);
// One step of decode_utf8: the codepoint at `pos` (< text.size()); advances `pos`.
uint32_t next_codepoint(std::string_view text, size_t& pos);
void append_utf8(uint32_t cpt, std::string& out);

// The classes the pre-tokenizer patterns use: \p{L}, \p{N}, \p{P}, \p{M}, \p{S} (Unicode
// general categories, one per codepoint) and \s (the White_Space property, the same set
// llama.cpp's generated tables hold).
struct CodepointClass {
  bool letter = false;
  bool number = false;
  bool punctuation = false;
  bool mark = false;
  bool symbol = false;
  bool whitespace = false;
};
CodepointClass classify(uint32_t cpt);

// GPT-2 byte-level alphabet: every byte maps to one printable codepoint (space -> U+0120 'Ġ').
// Returns the UTF-8 text of that codepoint.
std::string_view byte_to_unicode(uint8_t byte);
// Inverse of byte_to_unicode, on a codepoint; nullopt for codepoints outside the alphabet.
std::optional<uint8_t> unicode_to_byte(uint32_t cpt);

// Length of the longest prefix of `bytes` after which no UTF-8 sequence is left unfinished:
// a trailing lead byte whose continuation bytes have not all arrived yet (and that could still
// become a valid sequence) is excluded. Invalid bytes are never held back.
size_t complete_prefix_length(std::string_view bytes);

}  // namespace augur::tokenizer::unicode
