// Acceptors with a planted defect, so each law check (tests/spec/acceptance_exact_law_test.cpp,
// tests/engine/spec_exact_law_test.cpp, tests/engine/spec_statistics_test.cpp) and the greedy
// equality check can be shown to catch it. They subclass the production spec::Acceptor and run its
// token rule with altered inputs, or with an Rng that swaps the weights of one draw, so production
// holds no defect branches and the rule under test is still the production one. The block rule's
// defect (BlockResidualWithoutWeightAcceptor) is a whole rule of its own: its random choices do
// not map onto the production rule's one for one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/rng.h"
#include "spec/acceptance.h"

namespace augur::testing {

// After a rejection at draft i, reports i + 1 accepted (the rejected draft is committed too);
// both lanes.
class AcceptedCountOffByOneAcceptor final : public spec::Acceptor {
 public:
  explicit AcceptedCountOffByOneAcceptor(int n_vocab)
      : Acceptor(n_vocab, spec::SampledRule::kToken) {}
  spec::AcceptanceResult greedy(std::span<const int32_t> draft,
                                std::span<const float> p) const override {
    return off_by_one(Acceptor::greedy(draft, p), draft.size());
  }
  spec::AcceptanceResult sampled(std::span<const int32_t> draft, std::span<const float> q,
                                 std::span<const float> p, sampling::Rng& rng) override {
    return off_by_one(Acceptor::sampled(draft, q, p, rng), draft.size());
  }

 private:
  static spec::AcceptanceResult off_by_one(spec::AcceptanceResult result, size_t k) {
    if (static_cast<size_t>(result.n_accepted) < k) ++result.n_accepted;
    return result;
  }
};

// After k accepts, the bonus is drawn from q_k, the row d_k was drawn from (one-hot: d_k itself),
// instead of p_k: the production rule runs with p_k replaced by that row.
class BonusFromQAcceptor final : public spec::Acceptor {
 public:
  explicit BonusFromQAcceptor(int n_vocab) : Acceptor(n_vocab, spec::SampledRule::kToken) {}
  spec::AcceptanceResult sampled(std::span<const int32_t> draft, std::span<const float> q,
                                 std::span<const float> p, sampling::Rng& rng) override {
    if (draft.empty()) return Acceptor::sampled(draft, q, p, rng);
    const size_t vocab = static_cast<size_t>(n_vocab());
    const size_t k = draft.size();
    p_.assign(p.begin(), p.end());
    const auto bonus = p_.begin() + static_cast<std::ptrdiff_t>(k * vocab);  // [n_vocab]
    if (q.empty()) {
      std::fill(bonus, bonus + static_cast<std::ptrdiff_t>(vocab), 0.0f);
      bonus[draft[k - 1]] = 1.0f;
    } else {
      std::copy_n(q.begin() + static_cast<std::ptrdiff_t>((k - 1) * vocab), vocab, bonus);
    }
    return Acceptor::sampled(draft, q, p_, rng);
  }

 private:
  std::vector<float> p_;  // [k + 1, n_vocab]
};

// Runs the production rule with an Rng that hands the residual draw (the categorical that follows
// a failed bernoulli) other weights, chosen by the subclass from the rows of the rejected position.
class ResidualSwapAcceptor : public spec::Acceptor {
 public:
  explicit ResidualSwapAcceptor(int n_vocab) : Acceptor(n_vocab, spec::SampledRule::kToken) {}
  spec::AcceptanceResult sampled(std::span<const int32_t> draft, std::span<const float> q,
                                 std::span<const float> p, sampling::Rng& rng) override {
    Swap swap(*this, rng, draft, q, p);
    return Acceptor::sampled(draft, q, p, swap);
  }

 protected:
  // Writes the weights drawn from after rejecting `token`; p_row is p_{i-1}, q_row is q_i or empty
  // (one-hot on token). [n_vocab] each.
  virtual void residual(std::span<const float> p_row, std::span<const float> q_row, int32_t token,
                        std::vector<double>& weights) const = 0;

  static double sum(std::span<const float> row) {
    double total = 0.0;
    for (const float value : row) total += value;
    return total;
  }

 private:
  class Swap final : public sampling::Rng {
   public:
    Swap(const ResidualSwapAcceptor& owner, sampling::Rng& inner, std::span<const int32_t> draft,
         std::span<const float> q, std::span<const float> p)
        : owner_(owner), inner_(inner), draft_(draft), q_(q), p_(p) {}
    double uniform() override { return inner_.uniform(); }
    bool bernoulli(double prob) override {
      const bool accepted = inner_.bernoulli(prob);
      if (accepted) {
        ++pos_;
      } else {
        rejected_ = true;
      }
      return accepted;
    }
    int32_t categorical(std::span<const float> weights) override {
      return inner_.categorical(weights);
    }
    int32_t categorical(std::span<const double> weights) override {
      if (!rejected_) return inner_.categorical(weights);  // the bonus
      const size_t vocab = static_cast<size_t>(owner_.n_vocab());
      const auto q_row = q_.empty() ? std::span<const float>() : q_.subspan(pos_ * vocab, vocab);
      owner_.residual(p_.subspan(pos_ * vocab, vocab), q_row, draft_[pos_], weights_);
      return inner_.categorical(std::span<const double>(weights_));
    }

   private:
    const ResidualSwapAcceptor& owner_;
    sampling::Rng& inner_;
    std::span<const int32_t> draft_;
    std::span<const float> q_, p_;
    size_t pos_ = 0;
    bool rejected_ = false;
    std::vector<double> weights_;
  };
};

// The residual p - q without max(0, .): a draw cannot take negative weights, so it uses the
// magnitude |p - q| (its drawable form).
class ResidualWithoutClampAcceptor final : public ResidualSwapAcceptor {
 public:
  using ResidualSwapAcceptor::ResidualSwapAcceptor;

 protected:
  void residual(std::span<const float> p_row, std::span<const float> q_row, int32_t token,
                std::vector<double>& weights) const override {
    const double p_scale = 1.0 / sum(p_row);
    const double q_scale = q_row.empty() ? 1.0 : 1.0 / sum(q_row);
    weights.resize(p_row.size());
    for (size_t t = 0; t < p_row.size(); ++t) {
      const double q_t =
          q_row.empty() ? (static_cast<int32_t>(t) == token ? 1.0 : 0.0) : q_row[t] * q_scale;
      weights[t] = std::fabs(p_row[t] * p_scale - q_t);
    }
  }
};

// After a rejection, draws from p instead of the residual (the "resample the target" shortcut:
// biased towards the rejected draft).
class ResidualIsPAcceptor final : public ResidualSwapAcceptor {
 public:
  using ResidualSwapAcceptor::ResidualSwapAcceptor;

 protected:
  void residual(std::span<const float> p_row, std::span<const float>, int32_t,
                std::vector<double>& weights) const override {
    weights.assign(p_row.begin(), p_row.end());
  }
};

// The block rule drawing its correction after d_1..d_tau (0 < tau < k) from max(0, p_tau -
// q_{tau+1}), the token rule's residual, instead of max(0, w_tau p_tau - q_{tau+1}): the weight
// w_tau forgotten. Everything else is the block rule (spec/acceptance.h), written out here.
class BlockResidualWithoutWeightAcceptor final : public spec::Acceptor {
 public:
  explicit BlockResidualWithoutWeightAcceptor(int n_vocab)
      : Acceptor(n_vocab, spec::SampledRule::kBlock) {}
  spec::AcceptanceResult sampled(std::span<const int32_t> draft, std::span<const float> q,
                                 std::span<const float> p, sampling::Rng& rng) override {
    const size_t vocab = static_cast<size_t>(n_vocab());
    const int k = static_cast<int>(draft.size());
    if (k < 2) return Acceptor::sampled(draft, q, p, rng);  // the token rule there
    // Normalised rows: p_i (i <= k), and q_i for draft i + 1 (one-hot when q is empty).
    const auto p_at = [&](int i, size_t t) { return normalised(p, i, vocab)[t]; };
    const auto q_at = [&](int i, size_t t) {
      return q.empty() ? (static_cast<int32_t>(t) == draft[static_cast<size_t>(i)] ? 1.0 : 0.0)
                       : normalised(q, i, vocab)[t];
    };
    std::vector<double> w(static_cast<size_t>(k) + 1, 1.0);
    for (int i = 0; i < k; ++i) {
      const auto d = static_cast<size_t>(draft[static_cast<size_t>(i)]);
      const double ratio = w[static_cast<size_t>(i)] * p_at(i, d);
      w[static_cast<size_t>(i) + 1] = ratio == 0.0 ? 0.0 : std::min(1.0, ratio / q_at(i, d));
    }
    if (rng.bernoulli(w[static_cast<size_t>(k)])) {
      return {k, rng.categorical(p.subspan(static_cast<size_t>(k) * vocab, vocab))};
    }
    std::vector<double> residual(vocab);
    for (int i = k - 1; i >= 0; --i) {
      const double wi = w[static_cast<size_t>(i)];
      double mass = 0.0;
      for (size_t t = 0; t < vocab; ++t) mass += std::max(0.0, wi * p_at(i, t) - q_at(i, t));
      const double denominator = mass + (1.0 - wi);
      if (i > 0 && (!(denominator > 0.0) || !rng.bernoulli(mass / denominator))) continue;
      for (size_t t = 0; t < vocab; ++t) residual[t] = std::max(0.0, p_at(i, t) - q_at(i, t));
      return {i, rng.categorical(std::span<const double>(residual))};
    }
    return {0, -1};  // not reached: i = 0 always returns
  }

 private:
  // Row i of `rows` divided by its sum.
  std::vector<double> normalised(std::span<const float> rows, int i, size_t vocab) const {
    const auto row = rows.subspan(static_cast<size_t>(i) * vocab, vocab);
    double total = 0.0;
    for (const float v : row) total += v;
    std::vector<double> out(vocab);
    for (size_t t = 0; t < vocab; ++t) out[t] = row[t] / total;
    return out;
  }
};

}  // namespace augur::testing
