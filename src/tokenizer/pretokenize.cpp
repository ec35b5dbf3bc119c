#include "tokenizer/pretokenize.h"

#include <span>

#include "tokenizer/split_pattern.h"
#include "tokenizer/unicode.h"

namespace augur::tokenizer {

namespace {

using namespace split;  // NOLINT: the stage names read as the regex list they stand for

// The regex list of each pre-tokenizer, as stages in llama.cpp's order.
std::span<const Stage> stages_for(PreTokenizer pre) {
  static constexpr Stage kDefault[] = {default_punctuation, gpt2_words, number_runs,
                                       ascii_digit_triples};
  static constexpr Stage kGpt2[] = {gpt2_words};
  static constexpr Stage kLlama3[] = {llama3_words};
  static constexpr Stage kQwen2[] = {qwen2_words};
  static constexpr Stage kQwen35[] = {qwen35_words};
  static constexpr Stage kJais2[] = {jais2_words};
  static constexpr Stage kMiniCpm5[] = {number_triples, minicpm5_words};
  static constexpr Stage kDeepseekLlm[] = {each_newline,         deepseek_latin_words,
                                           deepseek_punctuation, trailing_whitespace,
                                           deepseek_cjk,         number_runs};
  static constexpr Stage kDeepseekCoder[] = {each_newline, letter_words, punctuation_words,
                                             deepseek_cjk, each_number};
  static constexpr Stage kDeepseek3[] = {number_triples, cjk_kana, deepseek3_words};
  static constexpr Stage kSpark25[] = {number_triples, cjk_kana, spark_words, each_number};
  static constexpr Stage kYoutu[] = {youtu_scripts, youtu_words};
  static constexpr Stage kFalcon[] = {falcon_punctuation, gpt2_words, ascii_digit_triples};
  static constexpr Stage kStarcoder[] = {each_number, gpt2_words};
  static constexpr Stage kBloom[] = {bloom_words};
  static constexpr Stage kViking[] = {bloom_words, each_number};
  static constexpr Stage kTekken[] = {tekken_words};
  static constexpr Stage kChameleon[] = {chameleon_sentinels,   chameleon_images,
                                         chameleon_spacing,     each_number,
                                         chameleon_punctuation, gpt2_words};
  static constexpr Stage kGpt4o[] = {gpt4o_words};
  static constexpr Stage kGraniteMulti[] = {granite_multi_words};
  static constexpr Stage kTinyAya[] = {digits_grouped_from_right, tiny_aya_words};
  static constexpr Stage kKimiK2[] = {kimi_k2_words};
  static constexpr Stage kSuperBpe[] = {number_runs, superbpe_digits};
  static constexpr Stage kSeedCoder[] = {seed_coder_words};
  static constexpr Stage kUfakzeka[] = {ufakzeka_words};
  static constexpr Stage kAfmoe[] = {afmoe_digits, afmoe_scripts, deepseek3_words};
  static constexpr Stage kLaguna[] = {newline_runs, qwen2_words};
  static constexpr Stage kExaoneMoe[] = {exaone_moe_words};

  switch (pre) {
    case PreTokenizer::Default: return kDefault;
    case PreTokenizer::Gpt2: return kGpt2;
    case PreTokenizer::Llama3: return kLlama3;
    case PreTokenizer::Qwen2: return kQwen2;
    case PreTokenizer::Qwen35: return kQwen35;
    case PreTokenizer::Jais2: return kJais2;
    case PreTokenizer::MiniCpm5: return kMiniCpm5;
    case PreTokenizer::DeepseekLlm: return kDeepseekLlm;
    case PreTokenizer::DeepseekCoder: return kDeepseekCoder;
    case PreTokenizer::Deepseek3: return kDeepseek3;
    case PreTokenizer::Spark25: return kSpark25;
    case PreTokenizer::Youtu: return kYoutu;
    case PreTokenizer::Falcon: return kFalcon;
    case PreTokenizer::Starcoder: return kStarcoder;
    case PreTokenizer::Bloom: return kBloom;
    case PreTokenizer::Viking: return kViking;
    case PreTokenizer::Tekken: return kTekken;
    case PreTokenizer::Chameleon: return kChameleon;
    case PreTokenizer::Gpt4o: return kGpt4o;
    case PreTokenizer::GraniteMulti: return kGraniteMulti;
    case PreTokenizer::TinyAya: return kTinyAya;
    case PreTokenizer::KimiK2: return kKimiK2;
    case PreTokenizer::SuperBpe: return kSuperBpe;
    case PreTokenizer::SeedCoder: return kSeedCoder;
    case PreTokenizer::Ufakzeka: return kUfakzeka;
    case PreTokenizer::Afmoe: return kAfmoe;
    case PreTokenizer::Laguna: return kLaguna;
    case PreTokenizer::ExaoneMoe: return kExaoneMoe;
  }
  return {};
}

// Runs `stage` over every current fragment; returns the new fragment lengths.
std::vector<size_t> apply(const Text& text, const std::vector<size_t>& lengths, Stage stage) {
  std::vector<size_t> out;
  out.reserve(lengths.size());
  size_t begin = 0;
  for (const size_t length : lengths) {
    Fragment fragment(text, begin, begin + length, out);
    stage(fragment);
    begin += length;
  }
  return out;
}

}  // namespace

std::vector<std::string> pretokenize(std::string_view text, PreTokenizer pre) {
  Text decoded;
  decoded.cpts = unicode::decode_utf8(text);
  decoded.classes.reserve(decoded.cpts.size());
  for (const uint32_t cpt : decoded.cpts) decoded.classes.push_back(unicode::classify(cpt));

  std::vector<size_t> lengths;
  if (!decoded.cpts.empty()) lengths.push_back(decoded.cpts.size());
  for (const Stage stage : stages_for(pre)) lengths = apply(decoded, lengths, stage);

  std::vector<std::string> words;
  words.reserve(lengths.size());
  size_t begin = 0;
  for (const size_t length : lengths) {
    std::string& word = words.emplace_back();
    for (size_t at = begin; at < begin + length; ++at) unicode::append_utf8(decoded.cpts[at], word);
    begin += length;
  }
  return words;
}

}  // namespace augur::tokenizer
