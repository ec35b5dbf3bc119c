// Each pre-tokenizer beyond gpt-2 / llama3 / qwen2 / default on a text where its regex list
// splits differently from its nearest neighbour. The expected words are worked out by hand
// from llama.cpp's regexes (with std::regex's leftmost-alternative, greedy-then-backtrack
// semantics, and the character classes llama.cpp's collapsed regexes see).
#include <gtest/gtest.h>

#include "tokenizer/pretokenize.h"

namespace augur::tokenizer {
namespace {

using Words = std::vector<std::string>;
using P = PreTokenizer;

TEST(PretokenizeVariants, StarcoderIsolatesEveryDigitBeforeGpt2) {
  EXPECT_EQ(pretokenize("x 1234 y", P::Starcoder), (Words{"x", " ", "1", "2", "3", "4", " y"}));
  EXPECT_EQ(pretokenize("x 1234 y", P::Gpt2), (Words{"x", " 1234", " y"}));
}

TEST(PretokenizeVariants, FalconKeepsBackticksInPunctuationRunsAndHasNoNumberStage) {
  EXPECT_EQ(pretokenize("a+=`b 12345", P::Falcon), (Words{"a", "+=`", "b", " ", "123", "45"}));
  EXPECT_EQ(pretokenize("a+=`b 12345", P::Default), (Words{"a", "+=", "`", "b", " ", "123", "45"}));
}

TEST(PretokenizeVariants, DeepseekLlmSplitsByScriptRanges) {
  // Newlines alone; " ÀB" is one latin word until the punctuation class (which holds A-Z but
  // not À) takes "B"; CJK and digits are split off last.
  EXPECT_EQ(pretokenize("Hello, 世界!\n  123 ÀB", P::DeepseekLlm),
            (Words{"Hello", ",", " ", "世界", "!", "\n", "  ", "123", " À", "B"}));
  // \s+$ cuts trailing spaces off a piece no later range would split.
  EXPECT_EQ(pretokenize("😀  ", P::DeepseekLlm), (Words{"😀", "  "}));
  // U+3000 is whitespace, so it is in neither the punctuation range nor the CJK range.
  EXPECT_EQ(pretokenize("。\u3000中", P::DeepseekLlm), (Words{"。", "\u3000", "中"}));
}

TEST(PretokenizeVariants, DeepseekCoderUsesLetterAndPunctuationClassesAndSingleDigits) {
  EXPECT_EQ(pretokenize("Hello, 世界!\n  123 ÀB", P::DeepseekCoder),
            (Words{"Hello", ",", " ", "世界", "!", "\n", "  ", "1", "2", "3", " ÀB"}));
}

TEST(PretokenizeVariants, Deepseek3GroupsDigitsByThreeAndJoinsPunctuationToAsciiWords) {
  EXPECT_EQ(
      pretokenize("Hello,world! 中文かな 12345 'tis\n\nx", P::Deepseek3),
      (Words{"Hello", ",world", "!", " ", "中文かな", " ", "123", "45", " '", "tis", "\n\n", "x"}));
  // '~' is in no class of the collapsed regex: it matches nothing and joins its neighbours.
  EXPECT_EQ(pretokenize("x ~~ y", P::Deepseek3), (Words{"x", " ", "~~", " y"}));
}

TEST(PretokenizeVariants, Spark25TakesNewlinesOneByOneAndSplitsDigits) {
  EXPECT_EQ(pretokenize("Hello,world! 中文かな 12345 'tis\n\nx", P::Spark25),
            (Words{"Hello", ",world", "!", " ", "中文かな", " ", "1", "2", "3", "4", "5", " '",
                   "tis", "\n", "\n", "x"}));
}

TEST(PretokenizeVariants, Qwen35KeepsCombiningMarksInWords) {
  const std::string text = "cafe\u0301s \u0301!";
  EXPECT_EQ(pretokenize(text, P::Qwen35), (Words{"cafe\u0301s", " \u0301", "!"}));
  EXPECT_EQ(pretokenize(text, P::Qwen2), (Words{"cafe", "\u0301s", " \u0301!"}));
}

TEST(PretokenizeVariants, Jais2CutsSpaceRunsInPowersOfTwo) {
  EXPECT_EQ(pretokenize("a          b", P::Jais2), (Words{"a", "        ", " ", " b"}));
  EXPECT_EQ(pretokenize("a     ", P::Jais2), (Words{"a", "    ", " "}));
  EXPECT_EQ(pretokenize("a          b", P::Llama3), (Words{"a", "         ", " b"}));
}

TEST(PretokenizeVariants, MiniCpm5SplitsDigitGroupsFirst) {
  // The digit stage ends the first piece at "a  ", so its spaces stay together.
  EXPECT_EQ(pretokenize("a  1", P::MiniCpm5), (Words{"a", "  ", "1"}));
  EXPECT_EQ(pretokenize("a  1", P::Llama3), (Words{"a", " ", " ", "1"}));
  EXPECT_EQ(pretokenize("x12345", P::MiniCpm5), (Words{"x", "123", "45"}));
}

TEST(PretokenizeVariants, SeedCoderKeepsNewlinesOutOfPunctuation) {
  EXPECT_EQ(pretokenize("a.\n\nb", P::SeedCoder), (Words{"a", ".", "\n\n", "b"}));
  EXPECT_EQ(pretokenize("a.\n\nb", P::Qwen2), (Words{"a", ".\n\n", "b"}));
}

TEST(PretokenizeVariants, UfakzekaHasNoContractions) {
  EXPECT_EQ(pretokenize("don'tcha", P::Ufakzeka), (Words{"don", "'tcha"}));
  EXPECT_EQ(pretokenize("don'tcha", P::Qwen2), (Words{"don", "'t", "cha"}));
}

TEST(PretokenizeVariants, ExaoneMoeJoinsWordsBySingleSpaces) {
  EXPECT_EQ(pretokenize("Hello world  x!\n\ny", P::ExaoneMoe),
            (Words{"Hello world", " ", " x", "!\n", "\n", "y"}));
  EXPECT_EQ(pretokenize("Hello world  x!\n\ny", P::Qwen2),
            (Words{"Hello", " world", " ", " x", "!\n\n", "y"}));
}

TEST(PretokenizeVariants, TekkenSplitsAtAsciiCaseChanges) {
  EXPECT_EQ(pretokenize("HTMLParser iPhone ABC", P::Tekken),
            (Words{"HTMLParser", " i", "Phone", " ABC"}));
  EXPECT_EQ(pretokenize("I'M HAPPY don't", P::Tekken), (Words{"I", "'M", " HAPPY", " don", "'t"}));
  // '/' may lead a word like a space does.
  EXPECT_EQ(pretokenize("x 12\n/y", P::Tekken), (Words{"x", " ", "1", "2", "\n", "/y"}));
  // Punctuation takes [\r\n/]* after it: newlines and then slashes.
  EXPECT_EQ(pretokenize("|\n/x", P::Tekken), (Words{"|\n/", "x"}));
}

TEST(PretokenizeVariants, Gpt4oKeepsContractionsOnWordsAndDigitsByThree) {
  EXPECT_EQ(pretokenize("I'M HAPPY don't", P::Gpt4o), (Words{"I'M", " HAPPY", " don't"}));
  EXPECT_EQ(pretokenize("x 12345", P::Gpt4o), (Words{"x", " ", "123", "45"}));
}

TEST(PretokenizeVariants, GraniteMultiCountsMarksAsLetters) {
  const std::string text = "Cafe\u0301 x\u0301y";
  EXPECT_EQ(pretokenize(text, P::GraniteMulti), (Words{"Cafe\u0301", " x\u0301y"}));
  EXPECT_EQ(pretokenize(text, P::Gpt4o), (Words{"Cafe", "\u0301", " x", "\u0301y"}));
}

TEST(PretokenizeVariants, YoutuSplitsHangulCjkAndPunctuationFirstAndIgnoresCase) {
  EXPECT_EQ(pretokenize("한국어ㄱ，中文 ABCdef's 12", P::Youtu),
            (Words{"한국어ㄱ", "，", "中文", " ABCdef's", " ", "1", "2"}));
}

TEST(PretokenizeVariants, TinyAyaGroupsDigitsFromTheRight) {
  EXPECT_EQ(pretokenize("ABCdef's 12345.", P::TinyAya), (Words{"ABCdef's", " ", "12", "345", "."}));
  // libstdc++ quirk kept: at the very start the lookahead's \b sees no digit before it.
  EXPECT_EQ(pretokenize("123 x", P::TinyAya), (Words{"12", "3", " x"}));
  // A run followed by a letter never matches \b, so the digits stay one piece for stage two.
  EXPECT_EQ(pretokenize("x 1234y", P::TinyAya), (Words{"x", " ", "123", "4", "y"}));
}

TEST(PretokenizeVariants, KimiK2SeparatesHanFromOtherLetters) {
  EXPECT_EQ(pretokenize("中文Hello世界 it's", P::KimiK2),
            (Words{"中文", "Hello", "世界", " it's"}));
  EXPECT_EQ(pretokenize("中文Hello世界 it's", P::Gpt4o), (Words{"中文Hello世界", " it's"}));
}

TEST(PretokenizeVariants, SuperBpeCutsOnlyNumbers) {
  EXPECT_EQ(pretokenize("1234567 ab 12", P::SuperBpe), (Words{"1", "234", "567", " ab ", "12"}));
}

TEST(PretokenizeVariants, BloomSplitsAtSpacesAndItsPunctuationList) {
  EXPECT_EQ(pretokenize("Hello, world!(x|y) ok", P::Bloom),
            (Words{"Hello", ",", " world", "!(", "x", "|", "y", ")", " ok"}));
  EXPECT_EQ(pretokenize("ab12 c3", P::Bloom), (Words{"ab12", " c3"}));
  EXPECT_EQ(pretokenize("ab12 c3", P::Viking), (Words{"ab", "1", "2", " c", "3"}));
}

TEST(PretokenizeVariants, ChameleonSplitsSpacePairsPunctuationAndDigits) {
  EXPECT_EQ(pretokenize("a    b", P::Chameleon), (Words{"a", "    ", "b"}));
  EXPECT_EQ(pretokenize("<sentinel:5>IMGIMGABZ  x12,y", P::Chameleon),
            (Words{"<", "sentinel", ":", "5", ">", "IMGIMGABZ", "  ", "x", "1", "2", ",", "y"}));
  EXPECT_EQ(pretokenize("<sentinel:5>IMGIMGABZ  x12,y", P::Starcoder),
            (Words{"<", "sentinel", ":", "5", ">", "IMGIMGABZ", " ", " x", "1", "2", ",", "y"}));
}

TEST(PretokenizeVariants, AfmoeGroupsDigitsFromTheLeftRemainderAndSplitsScripts) {
  EXPECT_EQ(pretokenize("ab12345 한국어x中文", P::Afmoe),
            (Words{"ab", "12", "345", " ", "한국어", "x", "中文"}));
  EXPECT_EQ(pretokenize("ab12345 한국어x中文", P::Deepseek3),
            (Words{"ab", "123", "45", " 한국어x", "中文"}));
}

TEST(PretokenizeVariants, LagunaSplitsAtNewlineRunsFirst) {
  EXPECT_EQ(pretokenize("a.\n", P::Laguna), (Words{"a", ".", "\n"}));
  EXPECT_EQ(pretokenize("a.\n", P::Qwen2), (Words{"a", ".\n"}));
  EXPECT_EQ(pretokenize("a.\r\rb", P::Laguna), (Words{"a", ".\r\r", "b"}));
  EXPECT_EQ(pretokenize("a.\r\rb", P::SeedCoder), (Words{"a", ".", "\r\r", "b"}));
}

}  // namespace
}  // namespace augur::tokenizer
