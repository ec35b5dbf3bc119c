// An Rng that replays a fixed list of uniforms, so a test can place a draw exactly on a CDF
// boundary and count how many uniforms the code under test consumed.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "sampling/rng.h"

namespace augur::sampling::testing {

class ScriptedRng final : public Rng {
 public:
  explicit ScriptedRng(std::vector<double> script) : script_(std::move(script)) {}
  double uniform() override {
    if (next_ >= script_.size()) {
      ADD_FAILURE() << "ScriptedRng ran out after " << script_.size() << " uniforms";
      return 0.0;
    }
    return script_[next_++];
  }
  size_t n_used() const { return next_; }

 private:
  std::vector<double> script_;
  size_t next_ = 0;
};

}  // namespace augur::sampling::testing
