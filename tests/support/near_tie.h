// Explains where augur's logits for Q8_0/Q4_0 weights depart from llama.cpp's: each departure
// must be an activation rounding that sat at a near-tie.
//
// augur runs llama.cpp's integer products on the same Q8_0 activation codes
// (kernels/quantize_activations.h), but the float parts (sums of block products, norms,
// attention) may add in another order, so an activation can land a few ulps away from
// llama.cpp's. That changes nothing unless the activation sat within those ulps of a rounding
// boundary: its code x * 127 / amax near a half-integer, or its block's scale amax / 127 near the
// midpoint of two fp16 values. Then the two engines round it to neighbouring values and the row
// departs by far more than the noise floor (one code is 1/127 of its block's amax), and through
// the KV cache the rows after it may too.
//
// explain_departures() replays a sequence of forward passes with the activation observer. At the
// first row beyond `atol`, it tries that row's nearest ties, then the nearest ties of all rows
// before it (an activation that feeds the KV cache can flip with little effect on its own row),
// nearest first, each rounded the other way in every matmul that quantizes those floats (q/k/v
// and gate/up share them, as in llama.cpp). A flip is kept when every row through the departing
// one is then within atol; the kept flips stay applied, so later rows are compared with llama.cpp
// as it computed them. A departing row that none of the candidates repairs is unexplained: a real
// difference from llama.cpp (a wrong weight, scale or kernel result), not a rounding.
//
// Distances are relative: how much the float (x for a code, amax / 127 for a scale) would have to
// move, as a fraction of itself, to round the other way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/quantize_activations.h"
#include "support/model_session.h"
#include "support/reference.h"
#include "tensor/matrix.h"

namespace augur::testing {

// One forward pass and llama.cpp's logits for each of its tokens.
struct ForwardPass {
  std::vector<int32_t> tokens;
  std::vector<const float*> want;  // [tokens.size()] -> [n_vocab]
};

// A rounding done the other way: in pass `pass`, the `group`-th distinct activation matrix
// quantized (a run of matmuls reading the same floats), at `row`, the code of column `index` or
// the scale of block `index`.
struct Flip {
  enum Kind { kCode, kScale };
  Kind kind = kCode;
  size_t pass = 0;
  int64_t group = 0, row = 0, index = 0;
  float distance = 0;  // relative move of the float that rounds it the other way
  bool same_site(const Flip& o) const {
    return kind == o.kind && pass == o.pass && group == o.group && row == o.row && index == o.index;
  }
};

struct RepairedRow {
  Flip flip;
  size_t pass = 0, row = 0;  // the departing row the flip brought within atol
  float before = 0;          // its max |augur - llama.cpp| before the flip
};

struct Explanation {
  std::vector<RepairedRow> repairs;
  float max_distance = 0;   // over the kept flips
  std::string unexplained;  // empty when every row is within atol once the flips are applied
};

// Which roundings count as near-ties, and how many a departing row gets tried: its own nearest,
// then the nearest over all rows before it.
struct NearTieSearch {
  // 32 float32 ulps. Two engines that add the same products in other orders land a few ulps apart
  // (the repairs measured on both kernel paths needed at most 3); a float further off than this
  // is a defect of its own, not a near-tie.
  float max_distance = 32 * std::numeric_limits<float>::epsilon();
  size_t own_row = 16;
  size_t earlier_rows = 64;
};

namespace near_tie_detail {

// The float value on the other side of the fp16 rounding of `v` (>= 0), and the relative
// distance of `v` from the midpoint between the two.
inline float other_fp16(float v, float* distance) {
  const uint16_t bits = tensor::fp32_to_fp16(v);
  const float d = tensor::fp16_to_fp32(bits);
  const uint16_t other_bits = v > d ? bits + 1 : (bits > 0 ? bits - 1 : bits + 1);
  const float other = tensor::fp16_to_fp32(other_bits);
  *distance = v != 0.0f ? std::fabs(v - 0.5f * (d + other)) / v : 1.0f;
  return other;
}

// Watches the activation matrices of one forward pass: numbers them by group, records each row's
// nearest ties, and rounds the chosen sites the other way.
class Observer {
 public:
  explicit Observer(const NearTieSearch& search) : search_(search) {
    kernels::set_activation_observer_for_testing(
        [this](const kernels::QuantizedActivations& a) { observe(a); });
  }
  ~Observer() { kernels::set_activation_observer_for_testing({}); }
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  void start_pass(size_t pass, const std::vector<Flip>& flips, bool record) {
    pass_ = pass;
    flips_ = &flips;
    record_ = record;
    group_ = -1;
    previous_.clear();
    nearest_.clear();
  }
  // [row] the nearest ties of each row of the last recorded pass, nearest first.
  std::vector<std::vector<Flip>> take_nearest() { return std::move(nearest_); }

 private:
  void observe(const kernels::QuantizedActivations& a) {
    const size_t n = static_cast<size_t>(a.rows * a.cols);
    if (previous_.size() != n || std::memcmp(previous_.data(), a.x, n * sizeof(float)) != 0) {
      ++group_;
      previous_.assign(a.x, a.x + n);
      if (record_) record(a);
    }
    for (const Flip& f : *flips_) {
      if (f.pass != pass_ || f.group != group_) continue;
      if (f.kind == Flip::kScale) {
        const size_t block = static_cast<size_t>(f.row * (a.cols / 32) + f.index);
        float unused = 0;
        a.scales[block] = other_fp16(amax(a, f.row, f.index * 32) / 127.0f, &unused);
        continue;
      }
      const size_t at = static_cast<size_t>(f.row * a.cols + f.index);
      const float t = scaled(a, f.row, f.index);
      AUGUR_CHECK(a.codes[at] == static_cast<int8_t>(std::nearbyint(t)),
                  "the observer's model of the Q8_0 rounding must match the kernel's");
      a.codes[at] = static_cast<int8_t>(a.codes[at] + (t > a.codes[at] ? 1 : -1));
    }
  }
  static float amax(const kernels::QuantizedActivations& a, int64_t row, int64_t col) {
    const float* block = a.x + row * a.cols + col / 32 * 32;
    float m = 0.0f;
    for (int i = 0; i < 32; ++i) m = std::fmax(m, std::fabs(block[i]));
    return m;
  }
  // x * 127 / amax over the element's block of 32, as ggml's quantize_row_q8_0 computes it.
  static float scaled(const kernels::QuantizedActivations& a, int64_t row, int64_t col) {
    const float m = amax(a, row, col);
    const float id = m != 0.0f ? 127.0f / m : 0.0f;
    return a.x[row * a.cols + col] * id;
  }
  void keep_if_near(std::vector<Flip>& best, const Flip& f) const {
    if (f.distance > search_.max_distance) return;
    if (best.size() == search_.own_row && f.distance >= best.back().distance) return;
    best.insert(
        std::upper_bound(best.begin(), best.end(), f,
                         [](const Flip& x, const Flip& y) { return x.distance < y.distance; }),
        f);
    if (best.size() > search_.own_row) best.pop_back();
  }
  void record(const kernels::QuantizedActivations& a) {
    nearest_.resize(std::max(nearest_.size(), static_cast<size_t>(a.rows)));
    for (int64_t row = 0; row < a.rows; ++row) {
      auto& best = nearest_[row];
      for (int64_t col = 0; col < a.cols; ++col) {
        const float t = scaled(a, row, col);
        const float half = std::fabs(t - std::nearbyint(t));  // 0.5 at a tie
        if (t == 0.0f) continue;
        keep_if_near(best, {Flip::kCode, pass_, group_, row, col, (0.5f - half) / std::fabs(t)});
      }
      for (int64_t block = 0; block < a.cols / 32; ++block) {
        float distance = 0;
        other_fp16(amax(a, row, block * 32) / 127.0f, &distance);
        keep_if_near(best, {Flip::kScale, pass_, group_, row, block, distance});
      }
    }
  }

  NearTieSearch search_;
  size_t pass_ = 0;
  const std::vector<Flip>* flips_ = nullptr;
  bool record_ = false;
  int64_t group_ = -1;
  std::vector<float> previous_;             // the floats of the last matrix seen
  std::vector<std::vector<Flip>> nearest_;  // [row] nearest ties, nearest first
};

}  // namespace near_tie_detail

// Runs `passes` in order on `s` (from its current cache), rounding near-tie activations the
// other way until every row is within `atol` of its reference row.
inline Explanation explain_departures(ModelSession& s, const std::vector<ForwardPass>& passes,
                                      float atol, const NearTieSearch& search = {}) {
  near_tie_detail::Observer observer(search);
  Explanation out;
  const int64_t n_vocab = s.n_vocab();
  std::vector<int64_t> start(passes.size() + 1, s.cache.size());  // cache rows before each pass
  std::vector<std::vector<std::vector<Flip>>> nearest(passes.size());  // [pass][row] ties
  std::vector<Flip> kept;
  size_t valid = 0;  // the passes before it hold in the cache the rows `kept` gives them
  const auto run = [&](size_t p, const std::vector<Flip>& flips, bool record) {
    s.cache.truncate(start[p]);
    observer.start_pass(p, flips, record);
    auto logits = s.all_logits(passes[p].tokens);
    if (record) nearest[p] = observer.take_nearest();
    start[p + 1] = s.cache.size();
    return logits;
  };
  const auto row_diff = [&](size_t p, const std::vector<float>& logits, size_t row) {
    return max_abs_diff(&logits[row * n_vocab], passes[p].want[row], n_vocab);
  };
  // The first row of pass p beyond atol (the pass's row count when none).
  const auto first_departure = [&](size_t p, const std::vector<float>& logits) {
    size_t row = 0;
    while (row < passes[p].tokens.size() && row_diff(p, logits, row) <= atol) ++row;
    return row;
  };
  // Replays passes from..p with `flips`: whether every row before row `row` of pass p is within
  // atol; *diff is then row `row`'s difference.
  const auto replay = [&](size_t from, size_t p, size_t row, const std::vector<Flip>& flips,
                          float* diff) {
    for (size_t q = std::min(from, valid); q <= p; ++q) {
      const auto logits = run(q, flips, false);
      if (first_departure(q, logits) < (q < p ? passes[q].tokens.size() : row)) return false;
      if (q == p) *diff = row_diff(p, logits, row);
    }
    return true;
  };
  for (size_t p = 0; p < passes.size();) {
    for (; valid < p; ++valid) run(valid, kept, true);
    const auto logits = run(p, kept, true);
    valid = p + 1;
    const size_t row = first_departure(p, logits);
    if (row == passes[p].tokens.size()) {
      ++p;
      continue;
    }
    const float diff = row_diff(p, logits, row);
    std::vector<Flip> candidates = nearest[p][row], earlier;
    for (size_t q = 0; q <= p; ++q) {
      for (size_t r = 0; r < (q == p ? row : nearest[q].size()); ++r) {
        earlier.insert(earlier.end(), nearest[q][r].begin(), nearest[q][r].end());
      }
    }
    std::sort(earlier.begin(), earlier.end(),
              [](const Flip& x, const Flip& y) { return x.distance < y.distance; });
    earlier.resize(std::min(earlier.size(), search.earlier_rows));
    candidates.insert(candidates.end(), earlier.begin(), earlier.end());
    bool repaired = false;
    for (const Flip& flip : candidates) {
      if (std::any_of(kept.begin(), kept.end(), [&](const Flip& k) { return k.same_site(flip); }))
        continue;
      auto trial = kept;
      trial.push_back(flip);
      float trial_diff = 0;
      const bool earlier_rows_hold = replay(flip.pass, p, row, trial, &trial_diff);
      valid = std::min(valid, flip.pass);
      if (earlier_rows_hold && trial_diff <= atol) {
        kept = std::move(trial);
        out.repairs.push_back({flip, p, row, diff});
        out.max_distance = std::max(out.max_distance, flip.distance);
        p = flip.pass;  // replay from the flip, recording the ties again
        repaired = true;
        break;
      }
    }
    if (!repaired) {
      out.unexplained = "pass " + std::to_string(p) + " row " + std::to_string(row) +
                        ": max |augur - llama.cpp| " + std::to_string(diff) + " > " +
                        std::to_string(atol) + ", and rounding none of its " +
                        std::to_string(nearest[p][row].size()) + " near-ties, nor the " +
                        std::to_string(earlier.size()) + " nearest of the rows before it (within " +
                        std::to_string(static_cast<int>(search.max_distance /
                                                        std::numeric_limits<float>::epsilon())) +
                        " ulps), the other way brings it within";
      return out;
    }
  }
  return out;
}

}  // namespace augur::testing
