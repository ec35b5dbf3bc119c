// Byte-level BPE (tokenizer.ggml.model = "gpt2"): llama.cpp's llm_tokenizer_bpe_session.
// Each pre-tokenized word is byte-encoded to the GPT-2 alphabet, split into characters, and the
// adjacent pair with the lowest merge rank (tokenizer.ggml.merges order; ties: leftmost) is
// merged until no ranked pair is left. Owns the merge table; the vocabulary is borrowed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/string_index.h"
#include "tokenizer/vocab.h"

namespace augur::tokenizer {

class BpeMerges {
 public:
  // Reads tokenizer.ggml.merges ("left right" per entry, rank = index). When absent: FormatError
  // if `required`, else no merges (llama.cpp lets kimi-k2 go without them).
  static std::unique_ptr<BpeMerges> load(const gguf::File& file, bool required = true);
  BpeMerges(const BpeMerges&) = delete;  // ranks_ indexes arena_
  BpeMerges& operator=(const BpeMerges&) = delete;

  // Rank of merging `left` with `right`, or -1 if the pair is not a merge. Thread-safe.
  int32_t rank(std::string_view left, std::string_view right) const;

 private:
  BpeMerges() = default;

  std::string arena_;  // all merge strings ("left right"), back to back
  StringIndex ranks_;  // "left right" -> rank, over arena_
};

// Appends the ids of raw `text` (one fragment, no special tokens in it) to `out`.
void bpe_tokenize(const Vocab& vocab, const BpeMerges& merges, std::string_view text,
                  std::vector<int32_t>& out);

}  // namespace augur::tokenizer
