// StreamDecoder: tokens in one at a time, only whole UTF-8 characters out.
#include <gtest/gtest.h>

#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace augur::tokenizer {
namespace {

using testing::vocab_tokenizer;
using testing::zoo_tokenizer;

// Emoji (with ZWJ and variation selector), CJK, Greek, Khmer and Myanmar: many of these
// characters are not single tokens, so their bytes arrive in several byte-level pieces.
constexpr std::string_view kMultiByteText =
    "def f():  # 🦙 λ → 我想在apple工作 😶‍🌫️ ✅ кошка ကြောင် កាន់តែ "
    "𝔘𝔫𝔦\n "
    " "
    " "
    " "
    "return "
    "'¿ñ?'\n";

// Strict UTF-8 check (no overlongs, surrogates or values past U+10FFFF).
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    size_t len = b < 0x80                   ? 1
                 : (b >= 0xC2 && b <= 0xDF) ? 2
                 : (b >= 0xE0 && b <= 0xEF) ? 3
                 : (b >= 0xF0 && b <= 0xF4) ? 4
                                            : 0;
    if (len == 0 || i + len > s.size()) return false;
    const auto b1 = len > 1 ? static_cast<uint8_t>(s[i + 1]) : 0x80;
    if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 > 0x9F) || (b == 0xF0 && b1 < 0x90) ||
        (b == 0xF4 && b1 > 0x8F)) {
      return false;
    }
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

// Streams `ids`, checking that every prefix emitted so far is valid UTF-8; returns the text.
std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  StreamDecoder decoder(tok);
  std::string emitted;
  for (const int32_t id : ids) {
    emitted += decoder.push(id);
    EXPECT_TRUE(valid_utf8(emitted)) << "after token " << id;
  }
  emitted += decoder.finish();
  return emitted;
}

size_t count_partial_pieces(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  size_t n = 0;
  for (const int32_t id : ids) n += valid_utf8(tok.token_to_piece(id)) ? 0 : 1;
  return n;
}

TEST(StreamDecoder, ByteLevelBpeNeverEmitsHalfACharacterAndConcatenatesToDecode) {
  const Tokenizer& tok = vocab_tokenizer("qwen2");
  const auto ids = tok.encode(kMultiByteText, false, false);
  ASSERT_GT(count_partial_pieces(tok, ids), 4u) << "the text must split characters across tokens";
  const std::string streamed = stream_all(tok, ids);
  EXPECT_EQ(streamed, tok.decode(ids));
  EXPECT_EQ(streamed, kMultiByteText);
}

TEST(StreamDecoder, SpmByteFallbackNeverEmitsHalfACharacterAndConcatenatesToDecode) {
  const Tokenizer& tok = zoo_tokenizer();
  // Generation streams after BOS; decode of a BOS-led sequence keeps the prefix space too.
  const auto ids = tok.encode(kMultiByteText, /*add_special=*/true, false);
  ASSERT_EQ(ids.front(), tok.bos());
  ASSERT_GT(count_partial_pieces(tok, ids), 4u) << "the text must use <0xXX> byte tokens";
  const std::string streamed = stream_all(tok, ids);
  EXPECT_EQ(streamed, tok.decode(ids));
  EXPECT_EQ(streamed, " " + std::string(kMultiByteText));
}

TEST(StreamDecoder, HoldsAnUnfinishedCharacterUntilItsLastByte) {
  const Tokenizer& tok = zoo_tokenizer();
  // "€" is E2 82 AC; feed it as three byte tokens.
  const auto e2 = testing::id_of_text(tok, "<0xE2>");
  const auto x82 = testing::id_of_text(tok, "<0x82>");
  const auto xac = testing::id_of_text(tok, "<0xAC>");
  ASSERT_GE(std::min({e2, x82, xac}), 0);
  StreamDecoder decoder(tok);
  EXPECT_EQ(decoder.push(e2), "");
  EXPECT_EQ(decoder.push(x82), "");
  EXPECT_EQ(decoder.push(xac), "€");
  EXPECT_EQ(decoder.finish(), "");
}

TEST(StreamDecoder, PassesInvalidBytesThroughAndFlushesATruncatedTailOnFinish) {
  const Tokenizer& tok = zoo_tokenizer();
  const auto e2 = testing::id_of_text(tok, "<0xE2>");
  const auto x41 = testing::id_of_text(tok, "<0x41>");
  const auto x80 = testing::id_of_text(tok, "<0x80>");
  ASSERT_GE(std::min({e2, x41, x80}), 0);
  StreamDecoder decoder(tok);
  EXPECT_EQ(decoder.push(x80), "\x80");  // a stray continuation byte can never become valid
  EXPECT_EQ(decoder.push(e2), "");
  EXPECT_EQ(decoder.push(x41),
            "\xE2"
            "A");  // E2 followed by 'A' is invalid: released as-is
  EXPECT_EQ(decoder.push(e2), "");
  EXPECT_EQ(decoder.finish(), "\xE2");
}

TEST(StreamDecoder, ControlTokensAreSilentUnlessSpecial) {
  const Tokenizer& tok = zoo_tokenizer();
  StreamDecoder plain(tok);
  EXPECT_EQ(plain.push(tok.eos()), "");
  StreamDecoder special(tok, /*special=*/true);
  EXPECT_EQ(special.push(tok.eos()), "</s>");
}

}  // namespace
}  // namespace augur::tokenizer
