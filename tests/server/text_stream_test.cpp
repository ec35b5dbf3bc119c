// TextStream: stop strings matched across token boundaries and never sent, text that might
// become a stop string held back, and whole UTF-8 characters only.
#include "server/text_stream.h"

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace augur::testing {
namespace {

class TextStreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = gguf::File::open(models_dir() / "zoo-target-q8_0.gguf").release();
    tok_ = tokenizer::Tokenizer::from_gguf(*file_).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete file_;
  }
  // Streams the tokens of `text` (one token at a time) and returns what was sent, chunk by chunk.
  static std::vector<std::string> stream(const std::string& text, std::vector<std::string> stop,
                                         bool* stopped = nullptr) {
    server::TextStream s(*tok_, std::move(stop));
    std::vector<std::string> chunks;
    for (const int32_t id : tok_->encode(text, false, false)) {
      chunks.push_back(s.push(id));
      if (s.stopped()) break;
    }
    chunks.push_back(s.finish());
    if (stopped) *stopped = s.stopped();
    std::string all;
    for (const auto& c : chunks) all += c;
    EXPECT_EQ(all, s.sent());
    return chunks;
  }
  // What a plain StreamDecoder makes of the text's tokens (the text with SPM's leading space).
  static std::string decoded(const std::string& text) {
    tokenizer::StreamDecoder d(*tok_);
    std::string out;
    for (const int32_t id : tok_->encode(text, false, false)) out += d.push(id);
    return out + d.finish();
  }
  static std::string joined(const std::vector<std::string>& chunks) {
    std::string all;
    for (const auto& c : chunks) all += c;
    return all;
  }
  static gguf::File* file_;
  static tokenizer::Tokenizer* tok_;
};
gguf::File* TextStreamTest::file_ = nullptr;
tokenizer::Tokenizer* TextStreamTest::tok_ = nullptr;

TEST_F(TextStreamTest, WithoutStopStringsSendsEverything) {
  const std::string text = "def add(a, b):\n    return a + b\n";
  bool stopped = true;
  const auto chunks = stream(text, {}, &stopped);
  EXPECT_FALSE(stopped);
  // SPM: the stream keeps the leading space that encode() adds as a prefix.
  EXPECT_EQ(joined(chunks), decoded(text));
  EXPECT_GT(chunks.size(), 5u);  // token by token, not all at the end
}

TEST_F(TextStreamTest, StopsBeforeAStopStringThatSpansTokens) {
  bool stopped = false;
  const auto chunks = stream("def add(a, b):\n    return a + b\ndef sub", {"return a"}, &stopped);
  EXPECT_TRUE(stopped);
  const std::string all = joined(chunks);
  EXPECT_EQ(all.find("return"), std::string::npos) << all;
  EXPECT_NE(all.find("def add(a, b):"), std::string::npos) << all;
  EXPECT_EQ(all.back(), ' ');  // the indentation before the stop string is kept
}

TEST_F(TextStreamTest, EarliestOfSeveralStopStringsWins) {
  bool stopped = false;
  const auto chunks = stream("alpha beta gamma delta", {"delta", "beta"}, &stopped);
  EXPECT_TRUE(stopped);
  const std::string all = joined(chunks);
  EXPECT_EQ(all.find("beta"), std::string::npos);
  EXPECT_NE(all.find("alpha"), std::string::npos);
}

TEST_F(TextStreamTest, HoldsBackAPossibleStartOfAStopStringThenReleasesIt) {
  // "retur" could begin "return!" but never does: held back, then sent in full at the end.
  bool stopped = true;
  const auto chunks = stream("x = 1\nreturn y\n", {"return!"}, &stopped);
  EXPECT_FALSE(stopped);
  EXPECT_EQ(joined(chunks), decoded("x = 1\nreturn y\n"));
  // No chunk before the one that rules the stop string out ends inside "return".
  std::string sent;
  for (const auto& c : chunks) {
    sent += c;
    const auto at = sent.rfind("retur");
    if (at != std::string::npos && at + 5 == sent.size()) ADD_FAILURE() << "sent a held prefix";
  }
}

TEST_F(TextStreamTest, NeverSplitsAUtf8Character) {
  // Characters outside the vocabulary arrive as byte-fallback tokens, one byte each.
  const std::string text = "π ≈ 3.14159 — ünïcödé 🎉";
  const auto chunks = stream(text, {});
  for (const auto& c : chunks) {
    // Every chunk is valid UTF-8 on its own: no continuation byte without its lead.
    size_t i = 0;
    while (i < c.size()) {
      const auto lead = static_cast<unsigned char>(c[i]);
      const size_t len = lead < 0x80 ? 1 : lead >> 5 == 6 ? 2 : lead >> 4 == 14 ? 3 : 4;
      ASSERT_NE(lead >> 6, 2u) << "chunk starts inside a character";
      ASSERT_LE(i + len, c.size()) << "chunk ends inside a character";
      i += len;
    }
  }
  EXPECT_NE(joined(chunks).find("🎉"), std::string::npos);
}

TEST_F(TextStreamTest, StopStringOfNonAsciiText) {
  bool stopped = false;
  const auto chunks = stream("one ≈ two ≈ three", {"≈ t"}, &stopped);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(joined(chunks).find("≈"), std::string::npos) << joined(chunks);
}

}  // namespace
}  // namespace augur::testing
