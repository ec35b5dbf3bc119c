// llama.cpp's own tokenizer test vectors (fixtures/tokenizers, FIXTURES.md section 9), every
// vocabulary found there: every case must encode to the recorded ids and decode back to its
// input. A vocabulary augur cannot load (e.g. a pre-tokenizer it does not implement) fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "gguf/file.h"
#include "llama_cpp_pre_flags.h"
#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace augur::tokenizer {
namespace {

using testing::read_cases;
using testing::read_expected_ids;
using testing::vocab_path;
using testing::vocab_tokenizer;

// Every vocabulary in fixtures/tokenizers, by the name between "ggml-vocab-" and ".gguf".
std::vector<std::string> vocab_names() {
  std::vector<std::string> names;
  const std::string prefix = "ggml-vocab-", suffix = ".gguf";
  for (const auto& entry :
       std::filesystem::directory_iterator(augur::testing::fixtures_dir() / "tokenizers")) {
    const std::string file = entry.path().filename().string();
    if (file.starts_with(prefix) && file.ends_with(suffix)) {
      names.push_back(file.substr(prefix.size(), file.size() - prefix.size() - suffix.size()));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Whether llama.cpp's detokenize cleans spaces for this vocabulary (llama_vocab::impl::load):
// every BPE (gpt2) vocabulary but those whose pre-tokenizer turns it off; never SPM. Cleaning
// drops the space in " ?", " !", " .", " ,", " ' " (both), " 's", " 'm", " 're", " 've".
bool llama_cpp_cleans_spaces(const gguf::File& file) {
  if (file.get_string("tokenizer.ggml.model") != "gpt2") return false;
  const auto pre = file.get_string_opt("tokenizer.ggml.pre").value_or("default");
  return !testing::kKeepSpaces.contains(pre);
}

// The vocabulary's tokenizer; a load error (Unsupported included) fails the test with its message.
const Tokenizer* load_or_fail(const std::string& name) {
  try {
    return &vocab_tokenizer(name);
  } catch (const Error& e) {
    ADD_FAILURE() << name << ": " << e.what();
    return nullptr;
  }
}

// The text llama.cpp's detokenize gives back for `input` under clean_spaces, written as plain
// substring replacements (independent of the implementation's in-place passes).
std::string expected_detokenized(std::string text, bool clean_spaces) {
  if (!clean_spaces) return text;
  const auto replace = [&](std::string_view from, std::string_view to) {
    for (size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  };
  for (const char* p : {" ?", " !", " .", " ,"}) replace(p, p + 1);
  replace(" ' ", "'");
  for (const char* c : {" 's", " 'm", " 're", " 've"}) replace(c, c + 1);
  return text;
}

TEST(VocabVectorsFixtures, TheDirectoryHoldsVocabularies) {
  EXPECT_FALSE(vocab_names().empty());
}

class VocabVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectors, EncodeMatchesLlamaCppIdsExactly) {
  const auto path = vocab_path(GetParam());
  const Tokenizer* tok = load_or_fail(GetParam());
  if (!tok) return;
  const auto cases = read_cases(path.string() + ".inp");
  const auto expected = read_expected_ids(path.string() + ".out");
  ASSERT_FALSE(cases.empty());
  ASSERT_EQ(cases.size(), expected.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(tok->encode(cases[i], /*add_special=*/false, /*parse_special=*/false), expected[i])
        << "case " << i << ": '" << cases[i] << "'";
  }
}

TEST_P(VocabVectors, DecodeGivesBackTheInput) {
  const auto path = vocab_path(GetParam());
  const Tokenizer* tok = load_or_fail(GetParam());
  if (!tok) return;
  const auto cases = read_cases(path.string() + ".inp");
  const auto expected = read_expected_ids(path.string() + ".out");
  ASSERT_EQ(cases.size(), expected.size());
  const bool clean_spaces = llama_cpp_cleans_spaces(*gguf::File::open(path));
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string want = expected_detokenized(cases[i], clean_spaces);
    if (want != cases[i]) {
      std::cout << "  [" << GetParam() << "] case " << i
                << " does not round-trip in llama.cpp either (clean_spaces rewrites it)\n";
    }
    EXPECT_EQ(tok->decode(expected[i]), want) << "case " << i << ": '" << cases[i] << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(LlamaCppFixtures, VocabVectors, ::testing::ValuesIn(vocab_names()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace augur::tokenizer
