// An Rng that takes every outcome of every random choice, one run per branch, and knows the
// exact probability of the branch it is on. Code under test names each choice's law
// (Rng::bernoulli, Rng::categorical); a bare uniform() is a failure, since its outcome could not
// be enumerated. Drive it as
//   EnumeratingRng rng;
//   do { rng.start_run(); run(rng); law[outcome] += rng.weight(); } while (rng.next_path());
// A run must be deterministic given its choices (it is replayed up to the branch point), and the
// weights of all runs sum to 1.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/rng.h"

namespace augur::sampling::testing {

class EnumeratingRng final : public Rng {
 public:
  double uniform() override {
    ADD_FAILURE() << "a uniform() drawn without naming its law cannot be enumerated";
    return 0.0;
  }

  bool bernoulli(double prob) override {
    if (!(prob >= 0.0 && prob <= 1.0)) ADD_FAILURE() << "bernoulli probability " << prob;
    options_.clear();
    if (prob > 0.0) options_.push_back({1, static_cast<long double>(prob)});
    if (prob < 1.0) options_.push_back({0, 1.0L - static_cast<long double>(prob)});
    return choose() == 1;
  }

  int32_t categorical(std::span<const float> weights) override { return weighted(weights); }
  int32_t categorical(std::span<const double> weights) override { return weighted(weights); }

  // Starts a run on the current path.
  void start_run() {
    depth_ = 0;
    weight_ = 1.0L;
  }
  // The probability of the branch the run took.
  long double weight() const { return weight_; }
  // Random choices the run made.
  size_t depth() const { return depth_; }

  // Moves to the next unexplored branch; false once every branch has been run.
  bool next_path() {
    EXPECT_EQ(depth_, path_.size()) << "a replayed run made fewer choices than recorded";
    path_.resize(depth_);
    while (!path_.empty() && path_.back().chosen + 1 == path_.back().options.size()) {
      path_.pop_back();
    }
    if (path_.empty()) return false;
    ++path_.back().chosen;
    return true;
  }

 private:
  struct Option {
    int32_t outcome;
    long double prob;
  };
  struct Point {
    size_t chosen;
    std::vector<Option> options;
  };

  template <typename Weight>
  int32_t weighted(std::span<const Weight> weights) {
    long double total = 0.0L;
    for (const Weight weight : weights) {
      if (!(weight >= Weight(0))) ADD_FAILURE() << "categorical weight " << weight;
      total += weight;
    }
    options_.clear();
    for (size_t index = 0; index < weights.size(); ++index) {
      if (weights[index] > Weight(0)) {
        options_.push_back({static_cast<int32_t>(index), weights[index] / total});
      }
    }
    return choose();
  }

  // The outcome the current path takes at this choice (the first one past the recorded path).
  int32_t choose() {
    if (options_.empty()) {
      ADD_FAILURE() << "a random choice with no outcome of positive probability";
      return 0;
    }
    if (depth_ == path_.size()) {
      path_.push_back({0, options_});
    } else if (path_[depth_].options.size() != options_.size()) {
      ADD_FAILURE() << "the replayed run is not deterministic at choice " << depth_;
    }
    const Option& option = path_[depth_].options[path_[depth_].chosen];
    weight_ *= option.prob;
    ++depth_;
    return option.outcome;
  }

  std::vector<Point> path_;
  size_t depth_ = 0;
  long double weight_ = 1.0L;
  std::vector<Option> options_;
};

}  // namespace augur::sampling::testing
