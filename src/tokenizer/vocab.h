// The vocabulary read from GGUF `tokenizer.ggml.*` metadata: token texts, scores, types and
// attributes, the text -> id index, special ids, end-of-generation set and the settings that
// steer encode/decode (add_bos, add_space_prefix, clean_spaces, ...), resolved with llama.cpp's
// defaults and overrides (llama_vocab::impl::load). Owns copies of all strings, so it does not
// depend on the gguf::File staying open. Tokenizing itself lives in spm.cpp / bpe.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/string_index.h"
#include "tokenizer/tokenizer.h"

namespace augur::tokenizer {

// Attribute bits, as llama.cpp's llama_token_attr: a token's GGUF type gives one of them and
// load-time fix-ups may add Control (end-of-generation texts such as "<|im_end|>").
enum TokenAttr : uint8_t {
  kAttrNormal = 1 << 0,
  kAttrUnknown = 1 << 1,
  kAttrControl = 1 << 2,
  kAttrUserDefined = 1 << 3,
  kAttrUnused = 1 << 4,
  kAttrByte = 1 << 5,
};

enum class VocabKind { Spm, Bpe };

struct Vocab {
  Vocab() = default;
  Vocab(const Vocab&) = delete;  // index_ points into text_arena
  Vocab& operator=(const Vocab&) = delete;

  VocabKind kind = VocabKind::Spm;
  PreTokenizer pre = PreTokenizer::Default;  // BPE only

  // Per token, indexed by id.
  std::vector<uint32_t> text_offset;  // [n_vocab + 1] into text_arena
  std::string text_arena;
  std::vector<float> scores;
  std::vector<TokenType> types;  // as stored in GGUF
  std::vector<uint8_t> attrs;    // TokenAttr bits after fix-ups
  std::vector<bool> eog;

  int32_t bos = -1, eos = -1, unk = -1, eot = -1, eom = -1, pad = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  bool clean_spaces = false;   // BPE detokenize strips spaces before ?!., and some contractions
  bool ignore_merges = false;  // BPE: a word that is itself a token skips merging (llama3)

  // Control, user-defined and unknown tokens, longest text first: the order in which their
  // texts are cut out of the input before tokenizing (llama.cpp's cache_special_tokens).
  std::vector<int32_t> special_tokens;

  int32_t size() const { return static_cast<int32_t>(types.size()); }
  std::string_view text(int32_t id) const {
    return std::string_view(text_arena)
        .substr(text_offset[id], text_offset[id + 1] - text_offset[id]);
  }
  bool has(int32_t id, TokenAttr attr) const { return (attrs[id] & attr) != 0; }
  // -1 when no token has exactly this text.
  int32_t find(std::string_view text) const { return index_.find(text); }
  // The token for one raw byte: SPM "<0xXX>" (else the byte itself as text), BPE the byte's
  // GPT-2 character. -1 when the vocabulary has neither.
  int32_t byte_token(uint8_t byte) const;

  // Builds the text -> id index once the arena is final; throws FormatError naming `source`
  // on a duplicate text.
  void build_index(std::string_view source);

 private:
  StringIndex index_;  // text -> id, over text_arena
};

// Reads and validates the vocabulary; throws Unsupported for an unknown tokenizer.ggml.model or
// .pre and FormatError for missing or inconsistent metadata.
std::unique_ptr<Vocab> load_vocab(const gguf::File& file);

}  // namespace augur::tokenizer
