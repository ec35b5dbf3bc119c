// The server's prefix cache beyond the slots: when a slot is handed to a request that shares
// less with it than it holds, the K/V rows it would lose are kept here (LRU, bounded by
// --cache-mib), and a later request that shares a longer prefix with a kept entry than with
// any free slot gets those rows restored into its slot instead of recomputing them. Used under
// the SlotPool's lock only.
#pragma once

#include <cstdint>
#include <list>
#include <span>

#include "engine/generator.h"

namespace augur::server {

class PrefixStore {
 public:
  explicit PrefixStore(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // Keeps `prefix`, most recently used. An entry it extends is replaced; if a kept entry already
  // extends it, nothing changes. Evicts the least recently used entries to stay within budget;
  // a prefix larger than the whole budget is not kept.
  void put(engine::Generator::Prefix prefix);
  // The kept entry sharing the longest common prefix with `prompt`, when that common prefix is
  // longer than `at_least` tokens (marked most recently used); null otherwise.
  const engine::Generator::Prefix* find(std::span<const int32_t> prompt, int64_t at_least);

  int64_t bytes() const { return bytes_; }
  int64_t entries() const { return static_cast<int64_t>(entries_.size()); }
  int64_t hits() const { return hits_; }

 private:
  static int64_t size_of(const engine::Generator::Prefix& p) {
    return static_cast<int64_t>(p.rows.size() + p.tokens.size() * sizeof(int32_t));
  }

  int64_t max_bytes_;
  int64_t bytes_ = 0;
  int64_t hits_ = 0;
  std::list<engine::Generator::Prefix> entries_;  // most recently used first
};

}  // namespace augur::server
