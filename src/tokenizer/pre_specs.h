// Which pre-tokenizer and settings each `tokenizer.ggml.pre` name selects for a BPE ("gpt2")
// vocabulary: llama.cpp's llama_vocab::impl::load name -> pre type table, with the flags it
// sets there, every alias included. The split patterns themselves are in pretokenize.h.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/pretokenize.h"

namespace augur::tokenizer {

struct PreSpec {
  std::string_view name;
  PreTokenizer pre;
  bool clean_spaces;   // detokenize drops the space in " ?", " !", " 's", ...
  bool ignore_merges;  // a word that is itself a token skips merging
  bool add_bos;
};

// The spec for `name`, or nullptr if augur does not support it.
const PreSpec* find_pre_spec(std::string_view name);

// Every supported name, comma-separated, in table order.
std::string supported_pre_names();

// Why a name llama.cpp knows is still unsupported here, or "" for a name it does not know.
std::string_view unsupported_pre_reason(std::string_view name);

}  // namespace augur::tokenizer
