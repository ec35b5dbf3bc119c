#include "tokenizer/string_index.h"

#include <cstring>

#include "common/error.h"

namespace augur::tokenizer {

namespace {

constexpr uint64_t kFnvOffset = 0xCBF29CE484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001B3ull;

uint64_t fnv(uint64_t hash, std::string_view bytes) {
  for (const char c : bytes) hash = (hash ^ static_cast<uint8_t>(c)) * kFnvPrime;
  return hash;
}

// FNV-1a mixes the low bits poorly for short keys; finish with a 64-bit avalanche.
uint64_t finish(uint64_t hash) {
  hash ^= hash >> 33;
  hash *= 0xFF51AFD7ED558CCDull;
  hash ^= hash >> 33;
  return hash;
}

}  // namespace

void StringIndex::reset(const std::string* arena, size_t expected_size) {
  arena_ = arena;
  size_t capacity = 16;
  while (capacity * 7 < expected_size * 10) capacity *= 2;
  slots_.assign(capacity, Slot{});
  size_ = 0;
}

template <typename Equal>
int32_t StringIndex::probe(uint64_t hash, Equal&& equal) const {
  if (slots_.empty()) return -1;
  const size_t mask = slots_.size() - 1;
  const auto short_hash = static_cast<uint32_t>(hash >> 32);
  for (size_t at = hash & mask;; at = (at + 1) & mask) {
    const Slot& slot = slots_[at];
    if (slot.value < 0) return -1;
    if (slot.hash == short_hash &&
        equal(std::string_view(*arena_).substr(slot.offset, slot.length))) {
      return slot.value;
    }
  }
}

int32_t StringIndex::insert(uint32_t offset, uint32_t length, int32_t value) {
  AUGUR_CHECK(value >= 0, "StringIndex values are non-negative");
  if ((size_ + 1) * 10 > slots_.size() * 7) {
    // Grow: re-insert every entry into a table twice the size.
    std::vector<Slot> old;
    old.swap(slots_);
    reset(arena_, (old.size() * 7 / 10 + 1) * 2);
    for (const Slot& slot : old) {
      if (slot.value >= 0) insert(slot.offset, slot.length, slot.value);
    }
  }
  const std::string_view key = std::string_view(*arena_).substr(offset, length);
  const uint64_t hash = finish(fnv(kFnvOffset, key));
  const size_t mask = slots_.size() - 1;
  const auto short_hash = static_cast<uint32_t>(hash >> 32);
  for (size_t at = hash & mask;; at = (at + 1) & mask) {
    Slot& slot = slots_[at];
    if (slot.value < 0) {
      slot = {offset, length, short_hash, value};
      ++size_;
      return -1;
    }
    if (slot.hash == short_hash &&
        std::string_view(*arena_).substr(slot.offset, slot.length) == key) {
      return slot.value;
    }
  }
}

int32_t StringIndex::find(std::string_view key) const {
  return probe(finish(fnv(kFnvOffset, key)),
               [&](std::string_view stored) { return stored == key; });
}

int32_t StringIndex::find(std::string_view left, char separator, std::string_view right) const {
  uint64_t hash = fnv(kFnvOffset, left);
  hash = (hash ^ static_cast<uint8_t>(separator)) * kFnvPrime;
  hash = finish(fnv(hash, right));
  return probe(hash, [&](std::string_view stored) {
    return stored.size() == left.size() + 1 + right.size() &&
           stored.substr(0, left.size()) == left && stored[left.size()] == separator &&
           stored.substr(left.size() + 1) == right;
  });
}

}  // namespace augur::tokenizer
