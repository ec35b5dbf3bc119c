// Every tokenizer.ggml.pre name llama.cpp knows for BPE selects the split and the flags it does
// there (llama_vocab::impl::load and llm_tokenizer_bpe). The names are compared by behaviour: a
// name must split a set of probe texts exactly as the regex list llama.cpp gives it.
#include "tokenizer/pre_specs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "llama_cpp_pre_flags.h"

namespace augur::tokenizer {
namespace {

using P = PreTokenizer;
using testing::kAddBos;
using testing::kIgnoreMerges;
using testing::kKeepSpaces;
using Splits = std::vector<std::vector<std::string>>;

// llama.cpp's name -> regex list (pre types with the same list share one PreTokenizer).
struct Expected {
  std::string_view name;
  P pre;
};
constexpr Expected kNames[] = {
    {"default", P::Default},
    {"minicpm5", P::MiniCpm5},
    {"llama3", P::Llama3},
    {"llama-v3", P::Llama3},
    {"llama-bpe", P::Llama3},
    {"falcon3", P::Llama3},
    {"falcon-h1", P::Llama3},
    {"pixtral", P::Llama3},
    {"midm-2.0", P::Llama3},
    {"lfm2", P::Llama3},
    {"jina-v5-nano", P::Llama3},
    {"dbrx", P::Llama3},
    {"smaug-bpe", P::Llama3},
    {"glm4", P::Llama3},
    {"chatglm-bpe", P::Llama3},
    {"deepseek-llm", P::DeepseekLlm},
    {"deepseek-coder", P::DeepseekCoder},
    {"deepseek-v3", P::Deepseek3},
    {"hunyuan-dense", P::Deepseek3},
    {"hy_v4", P::Deepseek3},
    {"joyai-llm", P::Deepseek3},
    {"spark2_5", P::Spark25},
    {"youtu", P::Youtu},
    {"falcon", P::Falcon},
    {"starcoder", P::Starcoder},
    {"refact", P::Starcoder},
    {"command-r", P::Starcoder},
    {"smollm", P::Starcoder},
    {"codeshell", P::Starcoder},
    {"exaone", P::Starcoder},
    {"minerva-7b", P::Starcoder},
    {"mellum2", P::Starcoder},
    {"gpt-2", P::Gpt2},
    {"phi-2", P::Gpt2},
    {"jina-es", P::Gpt2},
    {"jina-de", P::Gpt2},
    {"gigachat", P::Gpt2},
    {"jina-v2-es", P::Gpt2},
    {"jina-v2-de", P::Gpt2},
    {"a.x-4.0", P::Gpt2},
    {"mellum", P::Gpt2},
    {"modern-bert", P::Gpt2},
    {"jina-v1-en", P::Gpt2},
    {"jina-v2-code", P::Gpt2},
    {"roberta-bpe", P::Gpt2},
    {"mpt", P::Gpt2},
    {"olmo", P::Gpt2},
    {"jais", P::Gpt2},
    {"exaone4", P::Gpt2},
    {"trillion", P::Gpt2},
    {"granite-docling", P::Gpt2},
    {"jais-2", P::Jais2},
    {"qwen2", P::Qwen2},
    {"deepseek-r1-qwen", P::Qwen2},
    {"kormo", P::Qwen2},
    {"f2llmv2", P::Qwen2},
    {"stablelm2", P::Qwen2},
    {"megrez", P::Qwen2},
    {"hunyuan", P::Qwen2},
    {"solar-open", P::Qwen2},
    {"grok-2", P::Qwen2},
    {"bailingmoe", P::Qwen2},
    {"bailingmoe2", P::Qwen2},
    {"llada-moe", P::Qwen2},
    {"qwen35", P::Qwen35},
    {"poro-chat", P::Bloom},
    {"bloom", P::Bloom},
    {"gpt3-finnish", P::Bloom},
    {"viking", P::Viking},
    {"tekken", P::Tekken},
    {"exaone-moe", P::ExaoneMoe},
    {"chameleon", P::Chameleon},
    {"gpt-4o", P::Gpt4o},
    {"llama4", P::Gpt4o},
    {"kanana2", P::Gpt4o},
    {"talkie", P::Gpt4o},
    {"minimax-m2", P::Gpt4o},
    {"granite-embed-multi-97m", P::GraniteMulti},
    {"tiny_aya", P::TinyAya},
    {"cohere2moe", P::TinyAya},
    {"superbpe", P::SuperBpe},
    {"seed-coder", P::SeedCoder},
    {"kimi-k2", P::KimiK2},
    {"ufakzeka", P::Ufakzeka},
    {"afmoe", P::Afmoe},
    {"laguna", P::Laguna},
};

constexpr P kAllPre[] = {P::Default, P::Gpt2,     P::Llama3,      P::Qwen2,         P::Qwen35,
                         P::Jais2,   P::MiniCpm5, P::DeepseekLlm, P::DeepseekCoder, P::Deepseek3,
                         P::Spark25, P::Youtu,    P::Falcon,      P::Starcoder,     P::Bloom,
                         P::Viking,  P::Tekken,   P::Chameleon,   P::Gpt4o,         P::GraniteMulti,
                         P::TinyAya, P::KimiK2,   P::SuperBpe,    P::SeedCoder,     P::Ufakzeka,
                         P::Afmoe,   P::Laguna,   P::ExaoneMoe};

// Texts from pretokenize_variants_test on which neighbouring lists differ, and a.\r\rb (Laguna
// cuts only at \n, so its punctuation keeps the \r that SeedCoder leaves out).
Splits splits(P pre) {
  static constexpr const char* kProbes[] = {
      "x 1234 y",
      "a+=`b 12345",
      "Hello, 世界!\n  123 ÀB",
      "😀  ",
      "Hello,world! 中文かな 12345 'tis\n\nx",
      "x ~~ y",
      "cafe\u0301s \u0301!",
      "a          b",
      "a  1",
      "a.\n\nb",
      "don'tcha",
      "Hello world  x!\n\ny",
      "HTMLParser iPhone ABC",
      "I'M HAPPY don't",
      "Cafe\u0301 x\u0301y",
      "한국어ㄱ，中文 ABCdef's 12",
      "123 x",
      "中文Hello世界 it's",
      "1234567 ab 12",
      "Hello, world!(x|y) ok",
      "ab12 c3",
      "a    b",
      "ab12345 한국어x中文",
      "a.\n",
      "I'VE it's",
      "a.\r\rb",
  };
  Splits out;
  for (const char* probe : kProbes) out.push_back(pretokenize(probe, pre));
  return out;
}

TEST(PreSpecs, TheProbesTellEveryPreTokenizerApart) {
  for (size_t a = 0; a < std::size(kAllPre); ++a) {
    for (size_t b = a + 1; b < std::size(kAllPre); ++b) {
      EXPECT_NE(splits(kAllPre[a]), splits(kAllPre[b])) << "pre-tokenizers " << a << " and " << b;
    }
  }
}

TEST(PreSpecs, EveryLlamaCppNameSplitsAsItsRegexList) {
  for (const Expected& e : kNames) {
    const PreSpec* spec = find_pre_spec(e.name);
    ASSERT_NE(spec, nullptr) << e.name;
    EXPECT_EQ(splits(spec->pre), splits(e.pre)) << e.name;
  }
}

TEST(PreSpecs, FlagsFollowLlamaCpp) {
  for (const Expected& e : kNames) {
    const PreSpec* spec = find_pre_spec(e.name);
    ASSERT_NE(spec, nullptr) << e.name;
    EXPECT_EQ(spec->clean_spaces, !kKeepSpaces.contains(e.name)) << e.name;
    EXPECT_EQ(spec->ignore_merges, kIgnoreMerges.contains(e.name)) << e.name;
    EXPECT_EQ(spec->add_bos, kAddBos.contains(e.name)) << e.name;
  }
}

TEST(PreSpecs, EverySupportedNameIsCheckedHere) {
  const std::string names = supported_pre_names();
  size_t count = 0;
  for (size_t begin = 0; begin < names.size();) {
    size_t end = names.find(", ", begin);
    if (end == std::string::npos) end = names.size();
    const std::string_view name = std::string_view(names).substr(begin, end - begin);
    EXPECT_TRUE(std::any_of(std::begin(kNames), std::end(kNames), [&](const Expected& e) {
      return e.name == name;
    })) << name;
    ++count;
    begin = end + 2;
  }
  EXPECT_EQ(count, std::size(kNames));
}

TEST(PreSpecs, SentencePieceStyleAndUnknownNamesAreNotSupported) {
  for (const char* name : {"gemma4", "granite-embed-multi-311m", "sarvam-moe", "whitespace"}) {
    EXPECT_EQ(find_pre_spec(name), nullptr) << name;
    EXPECT_FALSE(unsupported_pre_reason(name).empty()) << name;
  }
  EXPECT_EQ(find_pre_spec("no-such-pre"), nullptr);
  EXPECT_TRUE(unsupported_pre_reason("no-such-pre").empty());
}

}  // namespace
}  // namespace augur::tokenizer
