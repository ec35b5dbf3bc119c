// The engine's one thread pool: persistent workers that split an index range statically.
// The calling thread runs the first chunk itself; no allocation or thread creation per call.
// Latency matters more than idle CPU: a small-model decode runs ~50 parallel_for calls per token,
// so workers spin briefly for the next call before they block on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace augur::kernels {

class ThreadPool {
 public:
  // n_threads >= 1 counts the calling thread (1 = run inline); InvalidArgument otherwise.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Splits [0, n) into min(n, size()) contiguous chunks of near-equal size (chunk c is
  // [n*c/k, n*(c+1)/k)) and calls fn(begin, end) once per chunk, each on its own thread; returns
  // when all are done. If fn throws, the first exception is rethrown here after every chunk has
  // finished (the pool stays usable). Calls from several threads are serialised; a call from
  // inside fn runs its chunks inline on that thread.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker_loop(int chunk);
  uint64_t wait_for_new_generation(uint64_t seen);
  void run_chunk(int chunk) noexcept;
  void wait_for_workers();

  const int n_threads_;
  std::vector<std::thread> workers_;  // worker i runs chunk i + 1
  std::mutex call_mutex_;             // one parallel_for at a time

  // The job of the current generation; written by the caller before it publishes the generation,
  // read by workers after they see it, rewritten only after every worker has acknowledged it.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int n_chunks_ = 0;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};

  alignas(64) std::atomic<uint64_t> generation_{0};  // bumped once per call (and at shutdown)
  alignas(64) std::atomic<int> pending_{0};          // workers yet to acknowledge this generation
  alignas(64) std::atomic<bool> stop_{false};

  // Blocking fallbacks after the spin: workers wait for a generation, the caller for pending_ == 0.
  std::atomic<int> sleeping_workers_{0};
  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  std::atomic<bool> caller_sleeping_{false};
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
};

}  // namespace augur::kernels
