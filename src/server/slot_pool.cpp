#include "server/slot_pool.h"

#include <algorithm>

#include "common/error.h"

namespace augur::server {

SlotPool::SlotPool(std::vector<std::unique_ptr<Slot>> slots, int max_queue,
                   int64_t prefix_cache_bytes)
    : slots_(std::move(slots)), leased_(slots_.size(), false), max_queue_(max_queue) {
  if (prefix_cache_bytes > 0) prefix_store_ = std::make_unique<PrefixStore>(prefix_cache_bytes);
  AUGUR_CHECK(!slots_.empty(), "a slot pool has at least one slot");
  for (size_t i = 0; i < slots_.size(); ++i) {
    AUGUR_CHECK(slots_[i]->id == static_cast<int>(i), "slot ids are their indexes");
  }
}

std::optional<SlotPool::Lease> SlotPool::acquire(std::span<const int32_t> prompt) {
  std::unique_lock lock(mutex_);
  if (shut_down_) return std::nullopt;
  if (n_busy_ == size()) {
    if (waiting_ >= max_queue_) return std::nullopt;
    ++waiting_;
    freed_.wait(lock, [&] { return shut_down_ || n_busy_ < size(); });
    --waiting_;
    if (shut_down_) return std::nullopt;
  }
  size_t best = slots_.size();
  int64_t best_common = -1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (leased_[i]) continue;
    const auto& cached = slots_[i]->generator->cached_tokens();
    const auto common = static_cast<int64_t>(
        std::mismatch(cached.begin(), cached.end(), prompt.begin(), prompt.end()).first -
        cached.begin());
    if (common > best_common ||
        (common == best_common && slots_[i]->last_used < slots_[best]->last_used)) {
      best = i;
      best_common = common;
    }
  }
  AUGUR_CHECK(best < slots_.size(), "a free slot exists when n_busy < size");
  if (prefix_store_) {
    engine::Generator& generator = *slots_[best]->generator;
    const auto held = static_cast<int64_t>(generator.cached_tokens().size());
    // The rows past the common prefix are about to be overwritten: keep them.
    if (held > best_common) prefix_store_->put(generator.save_prefix(held));
    if (const auto* kept = prefix_store_->find(prompt, best_common)) {
      generator.restore_prefix(*kept);
    }
  }
  leased_[best] = true;
  ++n_busy_;
  slots_[best]->last_used = ++clock_;
  return Lease(*this, *slots_[best]);
}

void SlotPool::release(Slot& slot) {
  {
    std::lock_guard lock(mutex_);
    leased_[static_cast<size_t>(slot.id)] = false;
    slot.kv_rows = slot.generator->cache().size();
    --n_busy_;
  }
  freed_.notify_one();
}

void SlotPool::shutdown() {
  {
    std::lock_guard lock(mutex_);
    shut_down_ = true;
  }
  freed_.notify_all();
}

int SlotPool::busy() const {
  std::lock_guard lock(mutex_);
  return n_busy_;
}

int SlotPool::queued() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

int64_t SlotPool::kv_bytes_in_use() const {
  std::lock_guard lock(mutex_);
  int64_t total = 0;
  for (const auto& slot : slots_) {
    const auto& cache = slot->generator->cache();
    if (cache.capacity() > 0) total += cache.bytes() / cache.capacity() * slot->kv_rows;
  }
  return total;
}

SlotPool::PrefixCacheStats SlotPool::prefix_cache_stats() const {
  std::lock_guard lock(mutex_);
  if (!prefix_store_) return {};
  return {prefix_store_->bytes(), prefix_store_->entries(), prefix_store_->hits()};
}

int64_t SlotPool::kv_bytes_capacity() const {
  int64_t total = 0;
  for (const auto& slot : slots_) total += slot->generator->cache().bytes();
  return total;
}

}  // namespace augur::server
