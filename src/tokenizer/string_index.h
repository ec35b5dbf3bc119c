// A flat open-addressing hash index from byte strings to int32 values, for the large lookups
// of a vocabulary (150k token texts) and a merge table (280k "left right" pairs). The strings
// stay in the owner's arena; the index keeps only offsets, so building it is one pass over a
// flat array instead of hundreds of thousands of node allocations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace augur::tokenizer {

class StringIndex {
 public:
  // `arena` must outlive the index and not move; insert only views into it.
  explicit StringIndex(const std::string* arena = nullptr) : arena_(arena) {}
  void reset(const std::string* arena, size_t expected_size);

  // Adds arena[offset, offset + length) -> value. If that string is already present, nothing
  // changes and the existing value is returned; otherwise -1.
  int32_t insert(uint32_t offset, uint32_t length, int32_t value);

  // The value for `key`, or -1.
  int32_t find(std::string_view key) const;
  // The value for the concatenation left + separator + right, without building it.
  int32_t find(std::string_view left, char separator, std::string_view right) const;

 private:
  struct Slot {
    uint32_t offset = 0;
    uint32_t length = 0;
    uint32_t hash = 0;
    int32_t value = -1;  // -1: empty slot
  };

  template <typename Equal>
  int32_t probe(uint64_t hash, Equal&& equal) const;

  const std::string* arena_;
  std::vector<Slot> slots_;  // capacity is a power of two, kept at most ~70% full
  size_t size_ = 0;
};

}  // namespace augur::tokenizer
