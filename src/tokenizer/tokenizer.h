// The tokenizer built from a GGUF file's `tokenizer.ggml.*` metadata, reproducing llama.cpp's
// llama_vocab: SPM ("llama") and byte-level BPE ("gpt2", with every byte-level pre-tokenizer
// llama.cpp names: pre_specs.cpp), special-token parsing, byte fallback, BOS/EOS, detokenizing, and
// a streaming decoder that never splits a UTF-8 character. Works on vocab-only GGUFs. Chat
// templates are not handled here.
//
// Thread safety: a loaded Tokenizer is immutable; encode/decode may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace augur::gguf {
class File;
}

namespace augur::tokenizer {

// Values as stored in tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6
};

struct Vocab;
class BpeMerges;

class Tokenizer {
 public:
  // Works on full models and on vocab-only GGUFs (no tensors). Throws Unsupported for an unknown
  // tokenizer.ggml.model / .pre (naming it and listing the supported values) and FormatError for
  // missing or inconsistent metadata.
  [[nodiscard]] static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& file);
  virtual ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  int32_t n_vocab() const;
  int32_t bos() const;  // -1 if absent
  int32_t eos() const;  // -1 if absent
  bool add_bos() const;
  bool add_eos() const;
  // End of generation: eos, eot, eom, FIM pad/repo/sep and llama.cpp's list of EOG texts
  // (<|eot_id|>, <|im_end|>, <|endoftext|>, ...). False for ids out of range.
  bool is_eog(int32_t id) const;
  // Control type, or forced to control because its text is an end-of-generation text.
  bool is_control(int32_t id) const;
  std::string_view token_text(int32_t id) const;  // raw vocabulary text (e.g. "▁Hello", "Ġworld")
  TokenType token_type(int32_t id) const;         // as stored in GGUF

  // add_special: prepend BOS / append EOS per the model's add_bos/add_eos settings.
  // parse_special: recognise control (and unknown) token texts inside `text`; user-defined
  // token texts are always recognised, as in llama.cpp.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes one token contributes to output text (SPM: U+2581 -> space, <0xXX> -> that byte;
  // BPE: byte-level decode). Control and unknown tokens give "" unless `special`.
  // Throws InvalidArgument for an id out of range.
  std::string token_to_piece(int32_t id, bool special = false) const;

  // llama.cpp's detokenize (remove_special = false): the pieces concatenated, minus one leading
  // space on the first piece when add_space_prefix is set (SPM), then, for vocabularies with
  // clean_spaces (gpt-2, llama-bpe), llama.cpp's clean-up of " ?", " !", " .", " ,", " ' ",
  // " 's", " 'm", " 're", " 've". Hence decode(encode(x, false, false)) == x except where that
  // clean-up rewrites x. Throws InvalidArgument for an id out of range.
  std::string decode(std::span<const int32_t> ids, bool special = false) const;

 private:
  Tokenizer(std::unique_ptr<Vocab> vocab, std::unique_ptr<BpeMerges> merges);
  void check_id(int32_t id) const;
  std::string_view piece(int32_t id, bool special) const;  // id already checked

  std::unique_ptr<Vocab> vocab_;
  std::unique_ptr<BpeMerges> merges_;  // BPE only
  // token_to_piece(id, special = true) of every token, back to back.
  std::string piece_arena_;
  std::vector<uint32_t> piece_offset_;  // [n_vocab + 1] into piece_arena_
};

// Feeds tokens one at a time and emits only complete UTF-8 sequences: a character whose bytes
// arrive in several tokens (byte-fallback pieces) is held back until it is whole. Invalid bytes
// are passed through as they are, never held.
//
// The output is the concatenation of token_to_piece, which is what llama.cpp prints while
// generating. It equals decode() of the same ids except for decode()'s whole-text adjustments:
// the first-token leading-space strip (SPM; none when the ids start with BOS) and the
// clean_spaces rewrite (gpt-2 / llama-bpe vocabularies).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool special = false);
  // The text that became complete with this token (may be empty).
  std::string push(int32_t id);
  // Whatever is held back (invalid bytes at the very end are emitted as-is); resets the decoder.
  std::string finish();

 private:
  const Tokenizer* tok_;
  bool special_;
  std::string pending_;  // bytes of an unfinished UTF-8 sequence (at most 3)
};

}  // namespace augur::tokenizer
