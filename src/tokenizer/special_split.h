// Cutting special-token texts out of the input before tokenizing (llama.cpp's
// tokenizer_st_partition). User-defined tokens are always cut out; control and unknown tokens
// only when `parse_special` is set, otherwise their texts stay plain text. Longer texts are
// cut first, each one at all its non-overlapping occurrences, left to right.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace augur::tokenizer {

struct Fragment {
  int32_t token = -1;  // >= 0: this special token; -1: raw text [offset, offset + length)
  size_t offset = 0;
  size_t length = 0;
};

// Fragments covering `text` in order (empty for empty text).
std::vector<Fragment> split_special(std::string_view text, const Vocab& vocab, bool parse_special);

}  // namespace augur::tokenizer
