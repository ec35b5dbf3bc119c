#include "tokenizer/unicode.h"

#include <unicode/uchar.h>

#include <array>

namespace augur::tokenizer::unicode {

namespace {

bool is_continuation(uint8_t byte) {
  return (byte & 0xC0) == 0x80;
}

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100 upwards in byte order.
struct ByteTable {
  std::array<std::string, 256> utf8;
  std::array<int16_t, 512> byte_of{};  // codepoint (< 512) -> byte, -1 if none

  ByteTable() {
    byte_of.fill(-1);
    uint32_t next = 256;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable =
          (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
      const uint32_t cpt = printable ? static_cast<uint32_t>(byte) : next++;
      append_utf8(cpt, utf8[byte]);
      byte_of[cpt] = static_cast<int16_t>(byte);
    }
  }
};

const ByteTable& byte_table() {
  static const ByteTable table;
  return table;
}

// Second-byte ranges that keep a multi-byte sequence valid (no overlongs, surrogates, > U+10FFFF).
bool valid_second_byte(uint8_t lead, uint8_t second) {
  if (!is_continuation(second)) return false;
  if (lead == 0xE0) return second >= 0xA0;
  if (lead == 0xED) return second <= 0x9F;
  if (lead == 0xF0) return second >= 0x90;
  if (lead == 0xF4) return second <= 0x8F;
  return true;
}

// Total length of a valid sequence starting with `lead`, 0 if `lead` never starts one.
size_t strict_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

}  // namespace

size_t sequence_length(uint8_t lead) {
  static constexpr size_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

uint32_t next_codepoint(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t at) { return static_cast<uint8_t>(text[at]); };
  const uint8_t lead = byte(pos);
  size_t len = 0;
  uint32_t cpt = 0;
  if (lead < 0x80) {
    len = 1;
    cpt = lead;
  } else if ((lead & 0xE0) == 0xC0) {
    len = 2;
    cpt = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3;
    cpt = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4;
    cpt = lead & 0x07;
  }
  bool ok = len > 0 && pos + len <= text.size();
  for (size_t k = 1; ok && k < len; ++k) {
    ok = is_continuation(byte(pos + k));
    cpt = (cpt << 6) | (byte(pos + k) & 0x3F);
  }
  if (!ok || cpt > 0x10FFFF) {
    pos += 1;
    return kReplacement;
  }
  pos += len;
  return cpt;
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
  std::vector<uint32_t> cpts;
  cpts.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) cpts.push_back(next_codepoint(text, pos));
  return cpts;
}

void append_utf8(uint32_t cpt, std::string& out) {
  if (cpt <= 0x7F) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

CodepointClass classify(uint32_t cpt) {
  CodepointClass cls;
  if (cpt > 0x10FFFF) return cls;
  const auto c = static_cast<UChar32>(cpt);
  switch (u_charType(c)) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER: cls.letter = true; break;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER: cls.number = true; break;
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION: cls.punctuation = true; break;
    case U_NON_SPACING_MARK:
    case U_ENCLOSING_MARK:
    case U_COMBINING_SPACING_MARK: cls.mark = true; break;
    case U_MATH_SYMBOL:
    case U_CURRENCY_SYMBOL:
    case U_MODIFIER_SYMBOL:
    case U_OTHER_SYMBOL: cls.symbol = true; break;
    default: break;
  }
  cls.whitespace = u_isUWhiteSpace(c);
  return cls;
}

std::string_view byte_to_unicode(uint8_t byte) {
  return byte_table().utf8[byte];
}

std::optional<uint8_t> unicode_to_byte(uint32_t cpt) {
  if (cpt >= 512) return std::nullopt;
  const int16_t byte = byte_table().byte_of[cpt];
  if (byte < 0) return std::nullopt;
  return static_cast<uint8_t>(byte);
}

size_t complete_prefix_length(std::string_view bytes) {
  const size_t size = bytes.size();
  // Only the last 3 bytes can belong to an unfinished sequence (sequences are at most 4 long).
  for (size_t back = 1; back <= 3 && back <= size; ++back) {
    const size_t start = size - back;
    const auto lead = static_cast<uint8_t>(bytes[start]);
    if (is_continuation(lead)) continue;
    const size_t need = strict_length(lead);
    if (need <= back) return size;  // complete, or a byte that can never start a sequence
    if (back >= 2 && !valid_second_byte(lead, static_cast<uint8_t>(bytes[start + 1]))) return size;
    for (size_t k = 2; k < back; ++k) {
      if (!is_continuation(static_cast<uint8_t>(bytes[start + k]))) return size;
    }
    return start;
  }
  return size;
}

}  // namespace augur::tokenizer::unicode
