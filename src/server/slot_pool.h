// The server's sessions: N slots, each a Generator (its own KV cache) and its own drafter over
// the one loaded model, and the bounded queue of requests waiting for a slot. The only place
// in the server where threads synchronise.
//
// Prefix reuse: a slot keeps the K/V rows of its last request. A new request goes to the free
// slot whose cached tokens share the longest prefix with its prompt (the least recently used
// one on a tie), and the Generator evaluates only the rest: a multi-turn chat or a shared
// system prompt costs only its new tokens. Rows a slot would lose go to the PrefixStore, and
// come back from it when a later request shares more with them than with any free slot.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "engine/generator.h"
#include "server/prefix_store.h"
#include "spec/draft_source.h"

namespace augur::server {

struct Slot {
  int id = 0;
  std::unique_ptr<engine::Generator> generator;
  std::unique_ptr<spec::DraftSource> drafter;  // null: autoregressive
  uint64_t last_used = 0;                      // pool clock tick of its last lease
  int64_t kv_rows = 0;  // rows its cache held when last released (guarded by the pool)
};

class SlotPool {
 public:
  // max_queue: requests allowed to wait when every slot is busy (more are refused);
  // prefix_cache_bytes: budget of the PrefixStore (0: none).
  SlotPool(std::vector<std::unique_ptr<Slot>> slots, int max_queue, int64_t prefix_cache_bytes = 0);

  // A slot held by one request; returned to the pool when the lease is destroyed.
  class Lease {
   public:
    Lease(SlotPool& pool, Slot& slot) : pool_(&pool), slot_(&slot) {}
    Lease(Lease&& other) noexcept : pool_(other.pool_), slot_(other.slot_) {
      other.pool_ = nullptr;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&& other) noexcept {
      if (this != &other) {
        if (pool_) pool_->release(*slot_);
        pool_ = other.pool_;
        slot_ = other.slot_;
        other.pool_ = nullptr;
      }
      return *this;
    }
    ~Lease() {
      if (pool_) pool_->release(*slot_);
    }
    Slot& slot() const { return *slot_; }

   private:
    SlotPool* pool_;
    Slot* slot_;
  };

  // Waits for a free slot and leases the best one for `prompt`. Returns nullopt at once when
  // max_queue requests are already waiting, or when the pool shuts down while waiting.
  [[nodiscard]] std::optional<Lease> acquire(std::span<const int32_t> prompt);
  // Wakes and refuses every waiting request; later acquire() calls return nullopt.
  void shutdown();

  int size() const { return static_cast<int>(slots_.size()); }
  int busy() const;
  int queued() const;
  int max_queue() const { return max_queue_; }
  // KV bytes of the rows the slots held when last released (rows x bytes per row); a slot in
  // use counts what it held before its request.
  int64_t kv_bytes_in_use() const;
  // KV bytes the slots have room for.
  int64_t kv_bytes_capacity() const;
  // The prefix store: bytes kept, entries, and requests it served.
  struct PrefixCacheStats {
    int64_t bytes = 0, entries = 0, hits = 0;
  };
  PrefixCacheStats prefix_cache_stats() const;

 private:
  void release(Slot& slot);

  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<bool> leased_;
  int max_queue_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  int waiting_ = 0;
  int n_busy_ = 0;
  uint64_t clock_ = 0;
  bool shut_down_ = false;
  std::unique_ptr<PrefixStore> prefix_store_;  // null: no prefix cache beyond the slots
};

}  // namespace augur::server
