#include "server/prefix_store.h"

#include <algorithm>

namespace augur::server {
namespace {

int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  return std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin();
}

}  // namespace

void PrefixStore::put(engine::Generator::Prefix prefix) {
  const int64_t size = size_of(prefix);
  if (prefix.tokens.empty() || size > max_bytes_) return;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const auto common = common_prefix(it->tokens, prefix.tokens);
    if (common == static_cast<int64_t>(prefix.tokens.size())) {
      entries_.splice(entries_.begin(), entries_, it);  // already kept (or extended)
      return;
    }
    if (common == static_cast<int64_t>(it->tokens.size())) {  // the new one extends it
      bytes_ -= size_of(*it);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  while (!entries_.empty() && bytes_ + size > max_bytes_) {
    bytes_ -= size_of(entries_.back());
    entries_.pop_back();
  }
  bytes_ += size;
  entries_.push_front(std::move(prefix));
}

const engine::Generator::Prefix* PrefixStore::find(std::span<const int32_t> prompt,
                                                   int64_t at_least) {
  auto best = entries_.end();
  int64_t best_common = at_least;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const auto common = common_prefix(it->tokens, prompt);
    if (common > best_common) {
      best = it;
      best_common = common;
    }
  }
  if (best == entries_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, best);
  ++hits_;
  return &entries_.front();
}

}  // namespace augur::server
