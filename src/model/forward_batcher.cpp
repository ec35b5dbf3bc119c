#include "model/forward_batcher.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace augur::model {

struct ForwardBatcher::Job {
  const UbatchRequest* request = nullptr;
  Memory* memory = nullptr;
  bool done = false;
  double cost_s = 0;
  std::exception_ptr error;
  int64_t rows() const { return static_cast<int64_t>(request->tokens.size()); }
};

namespace {

using Clock = std::chrono::steady_clock;

// How long a leader waits for sessions that have not submitted yet: half the last forward,
// within [100 us, 5 ms].
Clock::duration gather_window(double last_forward_s) {
  const double s = std::clamp(0.5 * last_forward_s, 100e-6, 5e-3);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

ForwardBatcher::ForwardBatcher(const Model& model, kernels::ThreadPool& pool, int64_t max_rows,
                               int64_t n_ctx)
    : model_(model), pool_(pool), max_rows_(max_rows) {
  if (max_rows < 1) throw InvalidArgument("a forward batcher needs room for at least one row");
  workspace_ = model.make_workspace(max_rows, n_ctx);
}

ForwardBatcher::~ForwardBatcher() = default;

void ForwardBatcher::join() {
  std::lock_guard lock(mutex_);
  ++active_;
}

void ForwardBatcher::leave() {
  {
    std::lock_guard lock(mutex_);
    --active_;
  }
  changed_.notify_all();  // a leader waiting for this session stops waiting
}

ForwardBatcher::Stats ForwardBatcher::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

double ForwardBatcher::forward(const UbatchRequest& request, Memory& memory) {
  AUGUR_CHECK(static_cast<int64_t>(request.tokens.size()) <= max_rows_,
              "a session's ubatch fits the batcher");
  Job job;
  job.request = &request;
  job.memory = &memory;
  std::unique_lock lock(mutex_);
  queue_.push_back(&job);
  changed_.notify_all();
  while (!job.done) {
    if (leader_busy_) {
      changed_.wait(lock);
      continue;
    }
    leader_busy_ = true;
    const auto deadline = Clock::now() + gather_window(last_forward_s_);
    const auto queued_rows = [&] {
      int64_t rows = 0;
      for (const Job* j : queue_) rows += j->rows();
      return rows;
    };
    while (static_cast<int>(queue_.size()) < active_ && queued_rows() < max_rows_ &&
           changed_.wait_until(lock, deadline) != std::cv_status::timeout) {
    }
    // First come, first served, as many as fit; only forwards over the same layers with the
    // same feature taps combine, and a drafter head's (per-row hidden input) runs alone.
    std::vector<Job*> batch;
    int64_t rows = 0;
    const UbatchRequest& first = *queue_.front()->request;
    for (auto it = queue_.begin(); it != queue_.end();) {
      Job* j = *it;
      const UbatchRequest& r = *j->request;
      const bool combines =
          batch.empty() ||
          (r.n_layers == first.n_layers && !first.hidden_in && !r.hidden_in && !first.hidden_out &&
           !r.hidden_out && std::ranges::equal(r.capture_layers, first.capture_layers));
      if (combines && rows + j->rows() <= max_rows_) {
        rows += j->rows();
        batch.push_back(j);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    const auto start = Clock::now();
    try {
      run(batch);
    } catch (...) {
      // One session's bad request (a full context, a bad token) fails before any row is
      // written: run each alone so that only its own forward fails.
      if (batch.size() == 1) {
        batch[0]->error = std::current_exception();
      } else {
        for (Job* j : batch) {
          try {
            run({j});
          } catch (...) {
            j->error = std::current_exception();
          }
        }
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    lock.lock();
    last_forward_s_ = seconds;
    ++stats_.forwards;
    stats_.jobs += static_cast<int64_t>(batch.size());
    stats_.rows += rows;
    constexpr size_t kTimings = 128;
    if (timings_.size() < kTimings) {
      timings_.push_back({static_cast<double>(rows), seconds});
    } else {
      timings_[next_timing_] = {static_cast<double>(rows), seconds};
    }
    next_timing_ = (next_timing_ + 1) % kTimings;
    fit_line();
    for (Job* j : batch) {
      j->cost_s = cost_of(j->rows(), static_cast<int64_t>(batch.size()), rows, seconds);
      j->done = true;
    }
    leader_busy_ = false;
    changed_.notify_all();
  }
  if (job.error) std::rethrow_exception(job.error);
  return job.cost_s;
}

void ForwardBatcher::fit_line() {
  const double n = static_cast<double>(timings_.size());
  double sum_r = 0, sum_s = 0, sum_rr = 0, sum_rs = 0;
  for (const Timing& t : timings_) {
    sum_r += t.rows;
    sum_s += t.seconds;
    sum_rr += t.rows * t.rows;
    sum_rs += t.rows * t.seconds;
  }
  const double var = n * sum_rr - sum_r * sum_r;
  line_known_ = n >= 8 && var > 1e-9 * n * n;
  if (!line_known_) return;
  line_b_ = std::max(0.0, (n * sum_rs - sum_r * sum_s) / var);
  line_a_ = std::max(0.0, (sum_s - line_b_ * sum_r) / n);
}

double ForwardBatcher::cost_of(int64_t rows, int64_t n_jobs, int64_t batch_rows,
                               double seconds) const {
  if (!line_known_ || n_jobs <= 1) {
    return batch_rows > 0 ? seconds * static_cast<double>(rows) / static_cast<double>(batch_rows)
                          : seconds;
  }
  return line_a_ / static_cast<double>(n_jobs) + line_b_ * static_cast<double>(rows);
}

void ForwardBatcher::run(const std::vector<Job*>& batch) {
  if (batch.size() == 1) {
    model_.forward_ubatch(*batch[0]->request, *batch[0]->memory, *workspace_, pool_);
    return;
  }
  tokens_.clear();
  positions_.clear();
  out_rows_.clear();
  segments_.clear();
  const auto n_vocab = static_cast<size_t>(model_.hparams().n_vocab);
  for (const Job* j : batch) {
    const UbatchRequest& r = *j->request;
    const auto first = static_cast<int64_t>(tokens_.size());
    segments_.push_back({first, j->rows(), j->memory});
    tokens_.insert(tokens_.end(), r.tokens.begin(), r.tokens.end());
    positions_.insert(positions_.end(), r.positions.begin(), r.positions.end());
    for (const int32_t row : r.out_rows) out_rows_.push_back(static_cast<int32_t>(first + row));
  }
  logits_.resize(out_rows_.size() * n_vocab);
  const size_t feature_row =
      batch.front()->request->capture_layers.size() * static_cast<size_t>(model_.hparams().n_embd);
  features_.resize(tokens_.size() * feature_row);
  UbatchRequest combined;
  combined.capture_layers = batch.front()->request->capture_layers;
  if (feature_row > 0) combined.features = features_.data();
  combined.tokens = tokens_;
  combined.positions = positions_;
  combined.out_rows = out_rows_;
  combined.logits = logits_.data();
  combined.n_layers = batch.front()->request->n_layers;
  model_.forward_segments(combined, segments_, *workspace_, pool_);
  size_t out = 0, row = 0;
  for (const Job* j : batch) {
    const size_t n = j->request->out_rows.size() * n_vocab;
    if (n > 0) std::memcpy(j->request->logits, logits_.data() + out, n * sizeof(float));
    out += n;
    const size_t f = static_cast<size_t>(j->rows()) * feature_row;
    if (f > 0)
      std::memcpy(j->request->features, features_.data() + row * feature_row, f * sizeof(float));
    row += static_cast<size_t>(j->rows());
  }
}

ForwardBatcher& ForwardBatcherSet::get(const Model& model, int n_layers) {
  for (auto& e : entries_) {
    if (e.model == &model && e.n_layers == n_layers) return *e.batcher;
  }
  entries_.push_back(
      {&model, n_layers, std::make_unique<ForwardBatcher>(model, pool_, max_rows_, n_ctx_)});
  return *entries_.back().batcher;
}

void ForwardBatcherSet::join_all() {
  for (auto& e : entries_) e.batcher->join();
}

void ForwardBatcherSet::leave_all() {
  for (auto& e : entries_) e.batcher->leave();
}

}  // namespace augur::model
