// The pre-tokenizer scanners against the regex semantics they stand for, on the cases where
// the patterns are subtle: \s+(?!\S), case-folded contractions, digit grouping, newlines.
#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

namespace augur::tokenizer {
namespace {

using Words = std::vector<std::string>;

TEST(Pretokenize, TrailingSpaceRunLeavesOneSpaceForTheNextWord) {
  // \s+(?!\S): of three spaces before "b", two stand alone and one prefixes "b".
  for (const auto pre : {PreTokenizer::Gpt2, PreTokenizer::Llama3, PreTokenizer::Qwen2}) {
    EXPECT_EQ(pretokenize("a   b", pre), (Words{"a", "  ", " b"}));
    EXPECT_EQ(pretokenize("a   ", pre), (Words{"a", "   "}));  // at the end all spaces stay
  }
}

TEST(Pretokenize, ContractionsFoldCaseOnlyForLlama3AndQwen2) {
  EXPECT_EQ(pretokenize("I'VE it's", PreTokenizer::Llama3), (Words{"I", "'VE", " it", "'s"}));
  EXPECT_EQ(pretokenize("I'VE it's", PreTokenizer::Qwen2), (Words{"I", "'VE", " it", "'s"}));
  EXPECT_EQ(pretokenize("I'VE it's", PreTokenizer::Gpt2), (Words{"I", "'", "VE", " it", "'s"}));
}

TEST(Pretokenize, DigitsGroupByThreeForLlama3AndOneForQwen2) {
  EXPECT_EQ(pretokenize("x1234567", PreTokenizer::Llama3), (Words{"x", "123", "456", "7"}));
  EXPECT_EQ(pretokenize("12 3", PreTokenizer::Qwen2), (Words{"1", "2", " ", "3"}));
  EXPECT_EQ(pretokenize("x 1234567", PreTokenizer::Gpt2), (Words{"x", " 1234567"}));
}

TEST(Pretokenize, NewlinesEndAWhitespaceRunForLlama3) {
  EXPECT_EQ(pretokenize("a\n\n  b", PreTokenizer::Llama3), (Words{"a", "\n\n", " ", " b"}));
  EXPECT_EQ(pretokenize("a.\n\nb", PreTokenizer::Llama3), (Words{"a", ".\n\n", "b"}));
  EXPECT_EQ(pretokenize("\tb", PreTokenizer::Llama3), (Words{"\tb"}));
  EXPECT_EQ(pretokenize("\tb", PreTokenizer::Gpt2), (Words{"\t", "b"}));
}

TEST(Pretokenize, DefaultSplitsPunctuationRunsThenGpt2ThenDigitTriples) {
  EXPECT_EQ(pretokenize("a+=12345 b", PreTokenizer::Default),
            (Words{"a", "+=", "123", "45", " b"}));
}

TEST(Pretokenize, UnicodeLettersNumbersAndMalformedBytes) {
  EXPECT_EQ(pretokenize("нещо 🦙x", PreTokenizer::Llama3), (Words{"нещо", " 🦙", "x"}));
  // A malformed byte becomes U+FFFD, as llama.cpp's decoder does.
  EXPECT_EQ(pretokenize("a\xFF", PreTokenizer::Gpt2), (Words{"a", "\xEF\xBF\xBD"}));
  EXPECT_TRUE(pretokenize("", PreTokenizer::Default).empty());
}

}  // namespace
}  // namespace augur::tokenizer
