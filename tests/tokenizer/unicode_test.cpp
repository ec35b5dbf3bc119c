#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace augur::tokenizer::unicode {
namespace {

TEST(Unicode, CompletePrefixHoldsBackOnlyAnUnfinishedValidSequence) {
  EXPECT_EQ(complete_prefix_length(""), 0u);
  EXPECT_EQ(complete_prefix_length("ab"), 2u);
  EXPECT_EQ(complete_prefix_length("a\xE2"), 1u);          // lead of a 3-byte character
  EXPECT_EQ(complete_prefix_length("a\xE2\x82"), 1u);      // two of its three bytes
  EXPECT_EQ(complete_prefix_length("a\xE2\x82\xAC"), 4u);  // "a€"
  EXPECT_EQ(complete_prefix_length("\xF0\x9F\xA6"), 0u);   // three bytes of 🦙
  EXPECT_EQ(complete_prefix_length("\xF0\x9F\xA6\x99"), 4u);
  EXPECT_EQ(complete_prefix_length("a\x80"), 2u);      // stray continuation: never valid, not held
  EXPECT_EQ(complete_prefix_length("a\xE0\x80"), 3u);  // overlong start: never valid
  EXPECT_EQ(complete_prefix_length("a\xFF"), 2u);
  EXPECT_EQ(complete_prefix_length("\xE2z"), 2u);
}

TEST(Unicode, DecodeMatchesLlamaCppOnMalformedInput) {
  EXPECT_EQ(decode_utf8("\xC3\xA4"), (std::vector<uint32_t>{0xE4}));
  // A truncated sequence yields one U+FFFD per byte.
  EXPECT_EQ(decode_utf8("\xE2\x82"), (std::vector<uint32_t>{kReplacement, kReplacement}));
  EXPECT_EQ(sequence_length(0xF0), 4u);
  EXPECT_EQ(sequence_length(0x80), 1u);
}

TEST(Unicode, Gpt2ByteAlphabetRoundTripsEveryByte) {
  for (int byte = 0; byte < 256; ++byte) {
    const auto cpts = decode_utf8(byte_to_unicode(static_cast<uint8_t>(byte)));
    ASSERT_EQ(cpts.size(), 1u);
    EXPECT_EQ(unicode_to_byte(cpts[0]), static_cast<uint8_t>(byte));
  }
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");  // 'Ġ'
  EXPECT_EQ(byte_to_unicode('a'), "a");
}

}  // namespace
}  // namespace augur::tokenizer::unicode
