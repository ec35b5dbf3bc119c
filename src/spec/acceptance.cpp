#include "spec/acceptance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "sampling/sampler.h"

namespace augur::spec {
namespace {

// Sum of a row in double. Four running sums in a fixed order, so the same row always gives the
// same sum (two bitwise-equal rows normalise to bitwise-equal values) and the adds pipeline.
double row_sum(std::span<const float> row) {
  double lane[4] = {0.0, 0.0, 0.0, 0.0};
  bool negative_or_nan = false;
  size_t index = 0;
  for (; index + 4 <= row.size(); index += 4) {
    for (size_t lane_index = 0; lane_index < 4; ++lane_index) {
      const float value = row[index + lane_index];
      negative_or_nan |= !(value >= 0.0f);
      lane[lane_index] += value;
    }
  }
  for (; index < row.size(); ++index) {
    negative_or_nan |= !(row[index] >= 0.0f);
    lane[0] += row[index];
  }
  const double total = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  AUGUR_CHECK(!negative_or_nan, "acceptance rows must be non-negative (NaN included)");
  AUGUR_CHECK(total > 0.0 && std::isfinite(total), "acceptance rows need a positive, finite sum");
  return total;
}

}  // namespace

Acceptor::Acceptor(int n_vocab, SampledRule rule) : n_vocab_(n_vocab), rule_(rule) {
  if (n_vocab <= 0) {
    throw InvalidArgument(fmt::format("acceptance: n_vocab = {}, expected > 0", n_vocab));
  }
  weights_.resize(static_cast<size_t>(n_vocab));
}

void Acceptor::check_shapes(std::span<const int32_t> draft, std::span<const float> q,
                            std::span<const float> p) const {
  const size_t vocab = static_cast<size_t>(n_vocab_);
  AUGUR_CHECK(p.size() == (draft.size() + 1) * vocab, "p must hold k + 1 rows of n_vocab");
  AUGUR_CHECK(q.empty() || q.size() == draft.size() * vocab,
              "q must be empty (one-hot) or hold k rows of n_vocab");
  for (const int32_t token : draft) {
    AUGUR_CHECK(token >= 0 && token < n_vocab_, "draft tokens must lie in [0, n_vocab)");
  }
}

AcceptanceResult Acceptor::greedy(std::span<const int32_t> draft, std::span<const float> p) const {
  check_shapes(draft, {}, p);
  const size_t vocab = static_cast<size_t>(n_vocab_);
  const int k = static_cast<int>(draft.size());
  for (int pos = 0; pos < k; ++pos) {
    const int32_t best = sampling::argmax(p.subspan(pos * vocab, vocab));
    if (draft[pos] != best) return {pos, best};
  }
  return {k, sampling::argmax(p.subspan(k * vocab, vocab))};
}

AcceptanceResult Acceptor::sampled(std::span<const int32_t> draft, std::span<const float> q,
                                   std::span<const float> p, sampling::Rng& rng) {
  check_shapes(draft, q, p);
  return rule_ == SampledRule::kBlock && draft.size() > 1 ? sampled_by_block(draft, q, p, rng)
                                                          : sampled_by_token(draft, q, p, rng);
}

int32_t Acceptor::draw_residual(std::span<const float> p_row, double p_scale, double weight,
                                std::span<const float> q_row, double q_scale, int32_t token,
                                sampling::Rng& rng) {
  double residual_total = 0.0;
  for (size_t t = 0; t < weights_.size(); ++t) {
    const double q_t =
        q_row.empty() ? (static_cast<int32_t>(t) == token ? 1.0 : 0.0) : q_row[t] * q_scale;
    weights_[t] = std::max(0.0, weight * (p_row[t] * p_scale) - q_t);
    residual_total += weights_[t];
  }
  // All zero means p = q up to rounding: a branch of probability 0 (see the header), so the
  // fallback cannot change the law; drawing from p keeps the token the target's.
  if (!(residual_total > 0.0)) std::copy(p_row.begin(), p_row.end(), weights_.begin());
  return rng.categorical(weights_);
}

AcceptanceResult Acceptor::sampled_by_block(std::span<const int32_t> draft,
                                            std::span<const float> q, std::span<const float> p,
                                            sampling::Rng& rng) {
  const size_t vocab = static_cast<size_t>(n_vocab_);
  const int k = static_cast<int>(draft.size());
  const bool one_hot = q.empty();
  const auto p_row = [&](int i) { return p.subspan(static_cast<size_t>(i) * vocab, vocab); };
  // q_row(i): the row d_{i+1} was drawn from (empty when one-hot).
  const auto q_row = [&](int i) {
    return one_hot ? std::span<const float>() : q.subspan(static_cast<size_t>(i) * vocab, vocab);
  };
  // Row scales and the weights w_0..w_k (kMaxDraft bounds k; see engine/generator.h).
  constexpr int kMaxRows = 65;
  AUGUR_CHECK(k < kMaxRows, "block acceptance handles at most 64 drafts");
  double p_scale[kMaxRows], q_scale[kMaxRows], w[kMaxRows];
  w[0] = 1.0;
  for (int i = 0; i < k; ++i) {
    p_scale[i] = 1.0 / row_sum(p_row(i));
    q_scale[i] = one_hot ? 1.0 : 1.0 / row_sum(q_row(i));
    const int32_t token = draft[static_cast<size_t>(i)];
    const double p_token = p_row(i)[static_cast<size_t>(token)] * p_scale[i];
    const double q_token = one_hot ? 1.0 : q_row(i)[static_cast<size_t>(token)] * q_scale[i];
    // min(1, w p / q), with p = 0 or w = 0 -> 0 and q = 0 < p -> 1, as in the token rule.
    const double ratio = w[i] * p_token;
    w[i + 1] = ratio == 0.0 ? 0.0 : ratio >= q_token ? 1.0 : ratio / q_token;
  }
  // The whole block first: kept with probability w_k, then the bonus from p_k.
  if (rng.bernoulli(w[k])) {
    const std::span<const float> bonus_row = p_row(k);
    row_sum(bonus_row);  // validates the row, as every row the lane reads
    std::copy(bonus_row.begin(), bonus_row.end(), weights_.begin());
    return {k, rng.categorical(weights_)};
  }
  // Then d_1..d_i for i = k - 1 down to 1, with h_i = m_i / (m_i + 1 - w_i).
  for (int i = k - 1; i >= 1; --i) {
    if (w[i] == 0.0) continue;  // m_i = 0 and h_i = 0: the test cannot succeed
    const std::span<const float> pi = p_row(i), qi = q_row(i);
    const int32_t next = draft[static_cast<size_t>(i)];
    double mass = 0.0;
    for (size_t t = 0; t < vocab; ++t) {
      const double q_t =
          one_hot ? (static_cast<int32_t>(t) == next ? 1.0 : 0.0) : qi[t] * q_scale[i];
      mass += std::max(0.0, w[i] * (pi[t] * p_scale[i]) - q_t);
    }
    const double denominator = mass + (1.0 - w[i]);
    if (!(denominator > 0.0) || !rng.bernoulli(mass / denominator)) continue;
    return {i, draw_residual(pi, p_scale[i], w[i], qi, q_scale[i], next, rng)};
  }
  return {0, draw_residual(p_row(0), p_scale[0], 1.0, q_row(0), q_scale[0], draft[0], rng)};
}

AcceptanceResult Acceptor::sampled_by_token(std::span<const int32_t> draft,
                                            std::span<const float> q, std::span<const float> p,
                                            sampling::Rng& rng) {
  const size_t vocab = static_cast<size_t>(n_vocab_);
  const int k = static_cast<int>(draft.size());
  const bool one_hot = q.empty();

  for (int pos = 0; pos < k; ++pos) {
    const int32_t token = draft[pos];
    const std::span<const float> p_row = p.subspan(pos * vocab, vocab);  // [n_vocab]
    const double p_scale = 1.0 / row_sum(p_row);
    const double p_token = p_row[token] * p_scale;
    std::span<const float> q_row;  // [n_vocab], empty when one-hot
    double q_scale = 1.0;
    double q_token = 1.0;
    if (!one_hot) {
      q_row = q.subspan(pos * vocab, vocab);
      q_scale = 1.0 / row_sum(q_row);
      q_token = q_row[token] * q_scale;
    }
    // min(1, p/q), with p = 0 -> 0 (never leave the target's support) and q = 0 < p -> 1.
    const double prob = p_token == 0.0 ? 0.0 : p_token >= q_token ? 1.0 : p_token / q_token;
    if (rng.bernoulli(prob)) continue;
    // Rejected: draw from normalise(max(0, p - q)); Rng::categorical normalises.
    return {pos, draw_residual(p_row, p_scale, 1.0, q_row, q_scale, token, rng)};
  }

  // k accepts: the bonus token from p_k.
  const std::span<const float> bonus_row = p.subspan(k * vocab, vocab);  // [n_vocab]
  row_sum(bonus_row);  // validates the row, as every row the lane reads
  std::copy(bonus_row.begin(), bonus_row.end(), weights_.begin());
  return {k, rng.categorical(weights_)};
}

}  // namespace augur::spec
