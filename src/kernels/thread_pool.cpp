#include "kernels/thread_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace augur::kernels {
namespace {

// How long a thread spins for the next event before it blocks. Long enough to bridge the serial
// work between two matmuls of one token (tens of microseconds), short enough not to burn a core
// between requests.
constexpr auto kSpinBudget = std::chrono::microseconds(200);

// The pool whose job this thread is running, to run nested calls inline instead of deadlocking.
thread_local const ThreadPool* t_running_pool = nullptr;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() holds or the budget runs out; true if done() held.
template <class Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinBudget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
    // On an oversubscribed machine the thread we wait for may need this core.
    std::this_thread::yield();
  }
}

int64_t chunk_begin(int64_t n, int chunk, int n_chunks) {
  // floor(n * chunk / n_chunks) without overflowing n * chunk.
  return (n / n_chunks) * chunk + (n % n_chunks) * chunk / n_chunks;
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  if (n_threads < 1) {
    throw InvalidArgument(fmt::format("thread count {}: expected at least 1", n_threads));
  }
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int chunk = 1; chunk < n_threads; ++chunk) {
    workers_.emplace_back([this, chunk] { worker_loop(chunk); });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  { std::lock_guard lock(wake_mutex_); }
  wake_cv_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  AUGUR_CHECK(n >= 0, "parallel_for needs a non-negative range");
  if (n == 0) return;
  const int n_chunks = static_cast<int>(std::min<int64_t>(n, n_threads_));
  if (n_chunks == 1) {
    fn(0, n);
    return;
  }
  if (t_running_pool == this) {  // nested call from inside a chunk: same chunks, this thread
    for (int chunk = 0; chunk < n_chunks; ++chunk) {
      fn(chunk_begin(n, chunk, n_chunks), chunk_begin(n, chunk + 1, n_chunks));
    }
    return;
  }

  std::lock_guard call_lock(call_mutex_);
  fn_ = &fn;
  n_ = n;
  n_chunks_ = n_chunks;
  error_ = nullptr;
  failed_.store(false, std::memory_order_relaxed);
  // Every worker acknowledges every generation, even without a chunk, so none can lag behind and
  // read the next job's fields half-written.
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard lock(wake_mutex_); }
    wake_cv_.notify_all();
  }

  const ThreadPool* outer = t_running_pool;
  t_running_pool = this;
  run_chunk(0);
  t_running_pool = outer;
  wait_for_workers();

  fn_ = nullptr;
  if (failed_.load(std::memory_order_acquire)) std::rethrow_exception(error_);
}

void ThreadPool::run_chunk(int chunk) noexcept {
  if (chunk >= n_chunks_) return;
  try {
    (*fn_)(chunk_begin(n_, chunk, n_chunks_), chunk_begin(n_, chunk + 1, n_chunks_));
  } catch (...) {
    if (!failed_.exchange(true, std::memory_order_acq_rel)) error_ = std::current_exception();
  }
}

void ThreadPool::wait_for_workers() {
  auto done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (spin_until(done)) return;
  std::unique_lock lock(done_mutex_);
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  done_cv_.wait(lock, [this] { return pending_.load(std::memory_order_seq_cst) == 0; });
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

uint64_t ThreadPool::wait_for_new_generation(uint64_t seen) {
  auto changed = [&] { return generation_.load(std::memory_order_acquire) != seen; };
  if (!spin_until(changed)) {
    std::unique_lock lock(wake_mutex_);
    // Paired with parallel_for's generation bump then sleeping_workers_ read (all seq_cst): either
    // the caller sees this sleeper and notifies under the mutex, or the predicate sees the bump.
    sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
    wake_cv_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
    sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
  }
  return generation_.load(std::memory_order_acquire);
}

void ThreadPool::worker_loop(int chunk) {
  t_running_pool = this;
  uint64_t seen = 0;
  for (;;) {
    seen = wait_for_new_generation(seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    run_chunk(chunk);
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_sleeping_.load(std::memory_order_seq_cst)) {
      { std::lock_guard lock(done_mutex_); }
      done_cv_.notify_one();
    }
  }
}

}  // namespace augur::kernels
