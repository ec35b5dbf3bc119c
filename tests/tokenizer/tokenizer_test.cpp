// Tokenizer behaviour around the core algorithms: special tokens, BOS/EOS, end of generation,
// pieces, and the errors for metadata we cannot honour.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf_writer.h"
#include "test_data.h"
#include "tokenizer/unicode.h"

namespace augur::tokenizer {
namespace {

using testing::GgufWriter;
using testing::id_of_text;
using testing::vocab_tokenizer;
using testing::zoo_tokenizer;

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// A small byte-level BPE vocabulary: the 256 byte characters plus a few merges.
GgufWriter tiny_bpe(std::string_view pre) {
  GgufWriter w;
  w.add_string("general.architecture", "gpt2");
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre);
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) {
    // GPT-2's alphabet for printable ASCII is the character itself.
    tokens.push_back(b >= 0x21 && b <= 0x7E ? std::string(1, static_cast<char>(b))
                                            : "<b" + std::to_string(b) + ">");
  }
  tokens.push_back("ab");             // 256
  tokens.push_back("<|endoftext|>");  // 257, control
  std::vector<int32_t> types(tokens.size(), 1);
  types.back() = 3;
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_ints("tokenizer.ggml.token_type", types);
  w.add_strings("tokenizer.ggml.merges", {"a b"});
  return w;
}

std::unique_ptr<Tokenizer> load_written(const GgufWriter& w, std::string_view name) {
  const auto path = std::filesystem::path(::testing::TempDir()) / (std::string(name) + ".gguf");
  w.write(path);
  return Tokenizer::from_gguf(*gguf::File::open(path));
}

// --- special tokens -------------------------------------------------------------------------

TEST(Tokenizer, ControlTokenTextsAreTokensOnlyWithParseSpecial) {
  const Tokenizer& tok = vocab_tokenizer("llama-bpe");
  const int32_t eot = id_of_text(tok, "<|eot_id|>");
  ASSERT_GE(eot, 0);
  const std::string text = "<|begin_of_text|>Hello<|eot_id|>";

  EXPECT_EQ(tok.encode(text, false, /*parse_special=*/true),
            concat({{tok.bos()}, tok.encode("Hello", false, false), {eot}}));

  const auto plain = tok.encode(text, false, /*parse_special=*/false);
  EXPECT_FALSE(contains(plain, tok.bos()));
  EXPECT_FALSE(contains(plain, eot));
  EXPECT_EQ(tok.decode(plain), text);
}

TEST(Tokenizer, SpmAddsTheSpacePrefixAfterEachSpecialToken) {
  const Tokenizer& tok = vocab_tokenizer("llama-spm");
  EXPECT_EQ(tok.encode("Hello<s>World</s>", false, /*parse_special=*/true),
            concat({tok.encode("Hello", false, false),
                    {tok.bos()},
                    tok.encode("World", false, false),
                    {tok.eos()}}));
  const auto plain = tok.encode("Hello<s>World</s>", false, /*parse_special=*/false);
  EXPECT_FALSE(contains(plain, tok.bos()));
  EXPECT_FALSE(contains(plain, tok.eos()));
  EXPECT_EQ(tok.decode(plain), "Hello<s>World</s>");
}

TEST(Tokenizer, UserDefinedTokensAreRecognisedEvenWithoutParseSpecial) {
  // As llama.cpp (and HF tokenizers): only control and unknown tokens depend on parse_special.
  const Tokenizer& tok = vocab_tokenizer("qwen2");
  const int32_t pad = id_of_text(tok, "[PAD151646]");
  const int32_t im_start = id_of_text(tok, "<|im_start|>");
  ASSERT_EQ(tok.token_type(pad), TokenType::UserDefined);
  ASSERT_EQ(tok.token_type(im_start), TokenType::Control);

  const auto ids = tok.encode("x[PAD151646]y<|im_start|>", false, /*parse_special=*/false);
  EXPECT_TRUE(contains(ids, pad));
  EXPECT_FALSE(contains(ids, im_start));
  EXPECT_EQ(tok.decode(ids), "x[PAD151646]y<|im_start|>");
}

TEST(Tokenizer, DecodeShowsControlTokensOnlyWhenSpecial) {
  const Tokenizer& tok = vocab_tokenizer("qwen2");
  const auto ids = tok.encode("<|im_start|>user\nhi<|im_end|>", false, /*parse_special=*/true);
  EXPECT_EQ(tok.decode(ids, /*special=*/true), "<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(tok.decode(ids, /*special=*/false), "user\nhi");
}

// --- BOS / EOS --------------------------------------------------------------------------------

TEST(Tokenizer, AddSpecialPrependsBosWhereTheModelAsksForIt) {
  const std::string text = "Hello world";
  for (const char* name : {"llama-spm", "llama-bpe"}) {
    const Tokenizer& tok = vocab_tokenizer(name);
    ASSERT_TRUE(tok.add_bos()) << name;
    EXPECT_EQ(tok.encode(text, /*add_special=*/true, false),
              concat({{tok.bos()}, tok.encode(text, false, false)}))
        << name;
    EXPECT_EQ(tok.encode("", /*add_special=*/true, false), std::vector<int32_t>{tok.bos()}) << name;
  }
  for (const char* name : {"qwen2", "gpt-2"}) {
    const Tokenizer& tok = vocab_tokenizer(name);
    EXPECT_FALSE(tok.add_bos()) << name;
    EXPECT_EQ(tok.encode(text, true, false), tok.encode(text, false, false)) << name;
  }
  EXPECT_TRUE(zoo_tokenizer().encode("", /*add_special=*/false, false).empty());
}

TEST(Tokenizer, AddSpecialAppendsEosWhenAddEosTokenIsSet) {
  GgufWriter w = tiny_bpe("gpt-2");
  w.add_u32("tokenizer.ggml.eos_token_id", 257);
  w.add_bool("tokenizer.ggml.add_eos_token", true);
  const auto tok = load_written(w, "add_eos");
  EXPECT_TRUE(tok->add_eos());
  EXPECT_EQ(tok->eos(), 257);
  EXPECT_EQ(tok->encode("ab", true, false), (std::vector<int32_t>{256, 257}));
  EXPECT_EQ(tok->encode("ab", false, false), (std::vector<int32_t>{256}));
}

// --- end of generation, pieces, ids ---------------------------------------------------------

TEST(Tokenizer, EndOfGenerationFollowsLlamaCpp) {
  const Tokenizer& llama3 = vocab_tokenizer("llama-bpe");
  EXPECT_TRUE(llama3.is_eog(llama3.eos()));
  EXPECT_TRUE(llama3.is_eog(id_of_text(llama3, "<|eot_id|>")));
  EXPECT_FALSE(llama3.is_eog(llama3.bos()));
  EXPECT_FALSE(llama3.is_eog(id_of_text(llama3, "<|start_header_id|>")));

  const Tokenizer& qwen = vocab_tokenizer("qwen2");
  EXPECT_TRUE(qwen.is_eog(id_of_text(qwen, "<|im_end|>")));
  EXPECT_TRUE(qwen.is_eog(id_of_text(qwen, "<|endoftext|>")));
  EXPECT_FALSE(qwen.is_eog(id_of_text(qwen, "<|im_start|>")));

  EXPECT_TRUE(zoo_tokenizer().is_eog(zoo_tokenizer().eos()));
  EXPECT_FALSE(zoo_tokenizer().is_eog(-1));
}

TEST(Tokenizer, PiecesUnescapeSpacesAndBytes) {
  const Tokenizer& spm = zoo_tokenizer();
  const int32_t newline = id_of_text(spm, "<0x0A>");
  ASSERT_GE(newline, 0);
  EXPECT_EQ(spm.token_to_piece(newline), "\n");
  EXPECT_EQ(spm.token_to_piece(spm.bos()), "");
  EXPECT_EQ(spm.token_to_piece(spm.bos(), /*special=*/true), "<s>");
  EXPECT_TRUE(spm.is_control(spm.bos()));

  const Tokenizer& gpt2 = vocab_tokenizer("gpt-2");
  const int32_t world = id_of_text(gpt2, "\xC4\xA0world");  // "Ġworld"
  ASSERT_GE(world, 0);
  EXPECT_EQ(gpt2.token_to_piece(world), " world");
}

TEST(Tokenizer, CleanSpacesRewritesOnlyLlamaCppsPatterns) {
  // gpt-2 and llama-bpe detokenize with clean_spaces: " ' " -> "'", " 's" -> "'s" and " ?" ->
  // "?", while " 't" keeps its space. qwen2 does not clean.
  const std::string text = "a ' b 's 't ?";
  for (const char* name : {"gpt-2", "llama-bpe"}) {
    const Tokenizer& tok = vocab_tokenizer(name);
    EXPECT_EQ(tok.decode(tok.encode(text, false, false)), "a'b's 't?") << name;
  }
  const Tokenizer& qwen = vocab_tokenizer("qwen2");
  EXPECT_EQ(qwen.decode(qwen.encode(text, false, false)), text);
}

TEST(Tokenizer, OutOfRangeIdsAreInvalidArguments) {
  const Tokenizer& tok = zoo_tokenizer();
  EXPECT_EQ(tok.n_vocab(), 4096);
  const std::vector<int32_t> bad = {5, tok.n_vocab()};
  EXPECT_THROW((void)tok.decode(bad), InvalidArgument);
  EXPECT_THROW((void)tok.token_to_piece(-1), InvalidArgument);
  EXPECT_THROW((void)tok.token_text(tok.n_vocab()), InvalidArgument);
  StreamDecoder decoder(tok);
  EXPECT_THROW((void)decoder.push(99999), InvalidArgument);
}

// --- metadata errors ------------------------------------------------------------------------

TEST(Tokenizer, UnknownPreTokenizerIsUnsupportedAndListsTheSupportedOnes) {
  try {
    (void)load_written(tiny_bpe("no-such-pre"), "unknown_pre");
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    const std::string message = e.what();
    for (const char* part : {"no-such-pre", "tokenizer.ggml.pre", "llama-bpe", "qwen2", "gpt-2"}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " missing in: " << message;
    }
  }
}

TEST(Tokenizer, UnknownModelIsUnsupportedAndListsTheSupportedOnes) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "bert");
  w.add_strings("tokenizer.ggml.tokens", {"a", "b"});
  try {
    (void)load_written(w, "unknown_model");
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    const std::string message = e.what();
    for (const char* part : {"bert", "llama", "gpt2"}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " missing in: " << message;
    }
  }
}

TEST(Tokenizer, VocabularyTypesBeyondSpmAndBpeAreUnsupportedNamingTheType) {
  for (const char* model : {"t5", "bert", "rwkv", "plamo2"}) {
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", model);
    w.add_strings("tokenizer.ggml.tokens", {"a", "b"});
    try {
      (void)load_written(w, std::string("model_") + model);
      ADD_FAILURE() << model << ": expected Unsupported";
    } catch (const Unsupported& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string("tokenizer.ggml.model '") + model + "'"),
                std::string::npos)
          << message;
    }
  }
}

TEST(Tokenizer, SentencePieceStyleBpePreTokenizersSayWhyTheyAreUnsupported) {
  try {
    (void)load_written(tiny_bpe("gemma4"), "pre_gemma4");
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    const std::string message = e.what();
    for (const char* part : {"'gemma4'", "SentencePiece-style", "supported: default"}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " missing in: " << message;
    }
  }
}

// The flags a pre-tokenizer name sets reach encode and decode: add_bos, ignore_merges (a word
// that is a token is not merged: "abc" is a token, but no merge builds it from "ab" + "c") and
// clean_spaces (" ," loses its space).
TEST(Tokenizer, PreTokenizerFlagsReachEncodeAndDecode) {
  struct Case {
    const char* pre;
    bool add_bos, ignore_merges, clean_spaces;
  };
  for (const Case& c : {Case{"tekken", true, true, false}, Case{"refact", false, false, true},
                        Case{"chameleon", true, false, false}, Case{"youtu", false, true, false},
                        Case{"stablelm2", false, false, true}, Case{"megrez", false, false, true},
                        Case{"llama4", false, false, false}}) {
    // The GPT-2 byte alphabet (id = byte), then "ab" (256, merged from "a b"), BOS, "abc".
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) {
      tokens.emplace_back(unicode::byte_to_unicode(static_cast<uint8_t>(b)));
    }
    tokens.insert(tokens.end(), {"ab", "<|endoftext|>", "abc"});
    std::vector<int32_t> types(tokens.size(), 1);
    types[257] = 3;
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", c.pre);
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_ints("tokenizer.ggml.token_type", types);
    w.add_strings("tokenizer.ggml.merges", {"a b"});
    w.add_u32("tokenizer.ggml.bos_token_id", 257);
    const auto tok = load_written(w, std::string("flags_") + c.pre);
    EXPECT_EQ(tok->add_bos(), c.add_bos) << c.pre;
    const auto abc = tok->encode("abc", false, false);
    const std::vector<int32_t> want_abc =
        c.ignore_merges ? std::vector<int32_t>{258} : std::vector<int32_t>{256, 'c'};
    EXPECT_EQ(abc, want_abc) << c.pre;
    EXPECT_EQ(tok->decode(tok->encode("a ,", false, false)), c.clean_spaces ? "a," : "a ,")
        << c.pre;
  }
}

TEST(Tokenizer, KimiK2LoadsWithoutMerges) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "kimi-k2");
  w.add_strings("tokenizer.ggml.tokens", {"a", "b", "ab"});
  const auto tok = load_written(w, "kimi_no_merges");
  EXPECT_EQ(tok->encode("ab", false, false), (std::vector<int32_t>{0, 1}));
}

TEST(Tokenizer, MissingMergesAndDuplicateTokensAreFormatErrors) {
  GgufWriter no_merges;
  no_merges.add_string("tokenizer.ggml.model", "gpt2");
  no_merges.add_string("tokenizer.ggml.pre", "gpt-2");
  no_merges.add_strings("tokenizer.ggml.tokens", {"a", "b"});
  EXPECT_THROW((void)load_written(no_merges, "no_merges"), FormatError);

  GgufWriter duplicate;
  duplicate.add_string("tokenizer.ggml.model", "llama");
  duplicate.add_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "a"});
  EXPECT_THROW((void)load_written(duplicate, "duplicate"), FormatError);
}

TEST(Tokenizer, SpmFallsBackToUnknownWhenAByteTokenIsMissing) {
  // No <0xXX> tokens at all: llama.cpp would abort here; we emit <unk>.
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a"});
  w.add_floats("tokenizer.ggml.scores", {0, 0, 0, -1, -1});
  w.add_ints("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
  const auto tok = load_written(w, "no_bytes");
  EXPECT_EQ(tok->encode("a z", false, false), (std::vector<int32_t>{3, 4, 3, 0}));
}

}  // namespace
}  // namespace augur::tokenizer
