// Runs the forward passes of concurrent sessions of one model as one forward: each session's
// thread submits its ubatch and blocks; one of them (the leader) gathers what the others have
// submitted, runs a single forward over all their rows (one segment per session's memory, see
// Model::forward_segments), hands each its logits and wakes them. The weights stream from
// memory once per batch instead of once per session, which on a memory-bound model is most of
// a forward's cost. Rows are bitwise what a forward of the session alone gives (the kernels are
// batch-invariant), so batching never changes an answer.
//
// Gathering: the leader waits until every session that is generating (joined) has submitted,
// or a short window has passed (a session may be sampling, drafting or writing to its client);
// the window is a fraction of the last batch's time, so waiting costs little of what batching
// saves.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/thread_pool.h"
#include "model/model.h"

namespace augur::model {

class ForwardBatcher {
 public:
  // max_rows: the most rows of one combined forward (at least one session's ubatch).
  ForwardBatcher(const Model& model, kernels::ThreadPool& pool, int64_t max_rows, int64_t n_ctx);
  ~ForwardBatcher();

  const Model& model() const { return model_; }
  int64_t max_rows() const { return max_rows_; }

  // Evaluates `request` on `memory` as Model::forward_ubatch would, batched with whatever the
  // other sessions submit meanwhile. Returns when its logits are written; rethrows an error of
  // the forward it was part of. Returns the seconds of the combined forward that are this
  // session's to pay (cost_of): what a planning drafter should weigh its rows by.
  double forward(const UbatchRequest& request, Memory& memory);

  // The cost of `rows` rows in a forward that carried `n_jobs` sessions' ubatches: the fixed
  // part of a forward (streaming the weights) split among the sessions, plus the marginal cost
  // of the rows themselves, from a least-squares line seconds = a + b * rows over the recent
  // forwards. Until the line is known (too few forwards, or all of one size): `seconds` of
  // that forward shared in proportion to rows.
  double cost_of(int64_t rows, int64_t n_jobs, int64_t batch_rows, double seconds) const;

  // A session generating: while joined, the leader waits for its submissions.
  void join();
  void leave();
  class Participation {
   public:
    explicit Participation(ForwardBatcher* batcher) : batcher_(batcher) {
      if (batcher_) batcher_->join();
    }
    ~Participation() {
      if (batcher_) batcher_->leave();
    }
    Participation(const Participation&) = delete;
    Participation& operator=(const Participation&) = delete;

   private:
    ForwardBatcher* batcher_;
  };

  struct Stats {
    int64_t forwards = 0;  // combined forwards run
    int64_t jobs = 0;      // session ubatches they carried
    int64_t rows = 0;
  };
  Stats stats() const;

 private:
  struct Job;
  // Runs one combined forward of `batch` (same n_layers, rows within max_rows).
  void run(const std::vector<Job*>& batch);

  const Model& model_;
  kernels::ThreadPool& pool_;
  int64_t max_rows_;
  std::unique_ptr<Workspace> workspace_;  // the leader's alone while it runs

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job*> queue_;
  int active_ = 0;            // joined sessions
  bool leader_busy_ = false;  // a leader is gathering or running
  double last_forward_s_ = 0;
  // Recent (rows, seconds) of the forwards run: a ring the cost line is fitted to.
  struct Timing {
    double rows = 0, seconds = 0;
  };
  std::vector<Timing> timings_;
  size_t next_timing_ = 0;
  double line_a_ = 0, line_b_ = 0;
  bool line_known_ = false;
  void fit_line();
  Stats stats_;

  // Scratch of the combined forward.
  std::vector<int32_t> tokens_, positions_, out_rows_;
  std::vector<MemorySegment> segments_;
  std::vector<float> logits_;
  std::vector<float> features_;  // [rows, taps, n_embd] when the batch captures features
};

// One batcher per (model, layers) that several sessions' drafters run (a draft model, a
// layer-skip depth of the target): their draft forwards are batched across sessions too.
// Batchers are made while the sessions are set up (not thread-safe then); join_all/leave_all
// count a session in every one while it generates.
class ForwardBatcherSet {
 public:
  ForwardBatcherSet(kernels::ThreadPool& pool, int64_t max_rows, int64_t n_ctx)
      : pool_(pool), max_rows_(max_rows), n_ctx_(n_ctx) {}
  ForwardBatcher& get(const Model& model, int n_layers);
  void join_all();
  void leave_all();

 private:
  struct Entry {
    const Model* model;
    int n_layers;
    std::unique_ptr<ForwardBatcher> batcher;
  };
  kernels::ThreadPool& pool_;
  int64_t max_rows_, n_ctx_;
  std::vector<Entry> entries_;
};

}  // namespace augur::model
