#include "kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/error.h"

namespace augur::kernels {
namespace {

struct Call {
  int64_t begin, end;
  std::thread::id thread;
};

// Runs one parallel_for and returns its calls sorted by begin.
std::vector<Call> record(ThreadPool& pool, int64_t n) {
  std::mutex mutex;
  std::vector<Call> calls;
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    std::lock_guard lock(mutex);
    calls.push_back({begin, end, std::this_thread::get_id()});
  });
  std::sort(calls.begin(), calls.end(),
            [](const Call& a, const Call& b) { return a.begin < b.begin; });
  return calls;
}

TEST(ThreadPool, RejectsThreadCountBelowOne) {
  EXPECT_THROW(ThreadPool(0), InvalidArgument);
  EXPECT_THROW(ThreadPool(-3), InvalidArgument);
}

TEST(ThreadPool, SplitsRangeIntoStaticContiguousChunksOnePerThread) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {1, 2, 3, 5, 64, 1001}) {
      const auto calls = record(pool, n);
      const int64_t k = std::min<int64_t>(n, threads);
      ASSERT_EQ(static_cast<int64_t>(calls.size()), k) << threads << " threads, n " << n;
      std::set<std::thread::id> distinct;
      for (int64_t c = 0; c < k; ++c) {
        EXPECT_EQ(calls[c].begin, n * c / k);
        EXPECT_EQ(calls[c].end, n * (c + 1) / k);
        EXPECT_LT(calls[c].begin, calls[c].end);
        distinct.insert(calls[c].thread);
      }
      EXPECT_EQ(static_cast<int64_t>(distinct.size()), k) << "each chunk on its own thread";
    }
  }
}

TEST(ThreadPool, CallerRunsTheFirstChunk) {
  ThreadPool pool(3);
  const auto calls = record(pool, 9);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].thread, std::this_thread::get_id());
}

TEST(ThreadPool, EmptyRangeCallsNothing) {
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    EXPECT_TRUE(record(pool, 0).empty());
  }
}

TEST(ThreadPool, RepeatedCallsCoverEveryIndexExactlyOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(37);
  for (int call = 0; call < 20000; ++call) {
    const int64_t n = 1 + call % 37;
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
    });
  }
  // Index i is inside the range of every call whose n > i.
  for (int64_t i = 0; i < 37; ++i) {
    int expected = 0;
    for (int call = 0; call < 20000; ++call) expected += (1 + call % 37) > i;
    EXPECT_EQ(hits[i].load(), expected) << i;
  }
}

TEST(ThreadPool, WakesWorkersThatWentToSleep) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // well past the spin budget
    std::atomic<int64_t> sum{0};
    pool.parallel_for(300, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i;
    });
    EXPECT_EQ(sum.load(), 300 * 299 / 2);
  }
}

TEST(ThreadPool, WaitsForSlowChunksBeforeReturning) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  pool.parallel_for(2, [&](int64_t begin, int64_t) {
    if (begin == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 2);
}

TEST(ThreadPool, RethrowsFirstExceptionAfterAllChunksAndStaysUsable) {
  ThreadPool pool(3);
  std::atomic<int> finished{0};
  try {
    pool.parallel_for(3, [&](int64_t begin, int64_t) {
      if (begin == 2) throw std::runtime_error("chunk 2 failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      finished.fetch_add(1);
    });
    FAIL() << "expected the chunk's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk 2 failed");
  }
  EXPECT_EQ(finished.load(), 2);
  EXPECT_EQ(record(pool, 6).size(), 3u);
}

TEST(ThreadPool, RethrowsExceptionFromCallersOwnChunk) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(2,
                                 [&](int64_t begin, int64_t) {
                                   if (begin == 0) throw InvalidArgument("first chunk");
                                 }),
               InvalidArgument);
  EXPECT_EQ(record(pool, 2).size(), 2u);
}

TEST(ThreadPool, NestedCallRunsInlineWithoutDeadlock) {
  ThreadPool pool(2);
  std::atomic<int64_t> inner_total{0};
  pool.parallel_for(2, [&](int64_t, int64_t) {
    const auto outer_thread = std::this_thread::get_id();
    pool.parallel_for(10, [&](int64_t begin, int64_t end) {
      EXPECT_EQ(std::this_thread::get_id(), outer_thread);
      inner_total += end - begin;
    });
  });
  EXPECT_EQ(inner_total.load(), 20);
}

TEST(ThreadPool, CallsFromTwoThreadsAreSerialisedAndBothComplete) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  auto hammer = [&] {
    for (int i = 0; i < 2000; ++i) {
      pool.parallel_for(4, [&](int64_t begin, int64_t end) { total += end - begin; });
    }
  };
  std::thread other(hammer);
  hammer();
  other.join();
  EXPECT_EQ(total.load(), 2 * 2000 * 4);
}

}  // namespace
}  // namespace augur::kernels
