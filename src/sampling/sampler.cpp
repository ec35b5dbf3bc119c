#include "sampling/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/error.h"

namespace augur::sampling {
namespace {

// Below this a heap-based partial_sort is cheapest (most candidates are rejected by one
// compare); above it nth_element + sort of the prefix wins. Both give the same result because
// the candidate order is a strict total order.
constexpr size_t kPartialSortMax = 128;
// top-p without top-k sorts this many candidates first, then grows the sorted prefix x4.
constexpr size_t kTopPFirstChunk = 256;

// Candidate order: higher penalised logit first, lower token id first on a tie.
struct ByLogitThenId {
  const float* logits;  // [n_vocab]
  bool operator()(int32_t a, int32_t b) const {
    const float la = logits[a];
    const float lb = logits[b];
    return la > lb || (la == lb && a < b);
  }
};

// Sorts [first, last) far enough that [first, mid) holds its smallest elements in order.
void sort_prefix(int32_t* first, int32_t* mid, int32_t* last, ByLogitThenId less) {
  if (mid == first) return;
  if (static_cast<size_t>(mid - first) <= kPartialSortMax) {
    std::partial_sort(first, mid, last, less);
    return;
  }
  if (mid != last) std::nth_element(first, mid, last, less);
  std::sort(first, mid, less);
}

std::string float_text(float value) {
  return fmt::format("{}", value);
}

}  // namespace

void SamplerConfig::validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    throw InvalidArgument(fmt::format(
        "sampler option temperature = {}: must be a finite number >= 0 (0 means greedy)",
        float_text(temperature)));
  }
  if (top_k < 0) {
    throw InvalidArgument(
        fmt::format("sampler option top_k = {}: must be >= 0 (0 disables it)", top_k));
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    throw InvalidArgument(fmt::format(
        "sampler option top_p = {}: must be in (0, 1] (1 disables it)", float_text(top_p)));
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    throw InvalidArgument(fmt::format(
        "sampler option min_p = {}: must be in [0, 1] (0 disables it)", float_text(min_p)));
  }
  if (!(repeat_penalty > 0.0f) || !std::isfinite(repeat_penalty)) {
    throw InvalidArgument(fmt::format(
        "sampler option repeat_penalty = {}: must be a finite number > 0 (1 disables it)",
        float_text(repeat_penalty)));
  }
  for (const auto& [name, value] : {std::pair{"frequency_penalty", frequency_penalty},
                                    {"presence_penalty", presence_penalty}}) {
    if (!std::isfinite(value)) {
      throw InvalidArgument(
          fmt::format("sampler option {} = {}: must be a finite number (0 disables it)", name,
                      float_text(value)));
    }
  }
  if (repeat_last_n < -1) {
    throw InvalidArgument(fmt::format(
        "sampler option repeat_last_n = {}: must be >= -1 (0 disables the penalty, -1 means "
        "the whole history)",
        repeat_last_n));
  }
}

int32_t argmax(std::span<const float> values) {
  AUGUR_CHECK(!values.empty(), "argmax needs at least one value");
  size_t best = 0;
  for (size_t index = 1; index < values.size(); ++index) {
    if (values[index] > values[best]) best = index;  // strict: the first maximum stays
  }
  return static_cast<int32_t>(best);
}

int32_t draw(std::span<const float> probs, Rng& rng) {
  return rng.categorical(probs);
}

Sampler::Sampler(SamplerConfig config, int n_vocab) : config_(config), n_vocab_(n_vocab) {
  config_.validate();
  if (n_vocab <= 0) {
    throw InvalidArgument(fmt::format("sampler: n_vocab = {}, expected > 0", n_vocab));
  }
  const auto n = static_cast<size_t>(n_vocab);
  penalised_.resize(n);
  order_.resize(n);
  seen_.assign(n, 0);
  probs_.resize(n);
}

void Sampler::penalise(std::span<const float> logits, std::span<const int32_t> history) const {
  AUGUR_CHECK(logits.size() == static_cast<size_t>(n_vocab_), "logits must hold n_vocab floats");
  float max_logit = -std::numeric_limits<float>::infinity();
  for (size_t token = 0; token < logits.size(); ++token) {
    const float logit = logits[token];
    if (std::isnan(logit) || logit == std::numeric_limits<float>::infinity()) {
      throw Error(fmt::format("sampler: logit of token {} is {}, expected a finite number or -inf",
                              token, float_text(logit)));
    }
    max_logit = std::max(max_logit, logit);
    penalised_[token] = logit;
  }
  if (max_logit == -std::numeric_limits<float>::infinity()) {
    throw Error(fmt::format("sampler: all {} logits are -inf, nothing can be sampled", n_vocab_));
  }

  const float penalty = config_.repeat_penalty;
  const float frequency = config_.frequency_penalty, presence = config_.presence_penalty;
  if ((penalty == 1.0f && frequency == 0.0f && presence == 0.0f) || config_.repeat_last_n == 0 ||
      history.empty()) {
    return;
  }
  const size_t window_size = config_.repeat_last_n < 0
                                 ? history.size()
                                 : std::min(history.size(), size_t(config_.repeat_last_n));
  const auto window = history.last(window_size);
  // Check every id before touching seen_, so a throw never leaves a mark behind.
  for (size_t pos = 0; pos < window.size(); ++pos) {
    if (window[pos] < 0 || window[pos] >= n_vocab_) {
      throw InvalidArgument(
          fmt::format("sampler: history token {} (position {} of {}) is outside the vocabulary "
                      "[0, {})",
                      window[pos], history.size() - window.size() + pos, history.size(), n_vocab_));
    }
  }
  // Each distinct token is penalised once, however often it repeats (llama.cpp's rule); the
  // frequency penalty scales with the count. seen_ is all zeros again afterwards.
  for (const int32_t token : window) ++seen_[token];
  for (const int32_t token : window) {
    const int32_t count = seen_[token];
    if (count == 0) continue;
    seen_[token] = 0;
    float& logit = penalised_[token];
    if (penalty != 1.0f) logit = logit > 0.0f ? logit / penalty : logit * penalty;
    if (frequency != 0.0f || presence != 0.0f) {
      logit -= static_cast<float>(count) * frequency + presence;
    }
  }
}

void Sampler::distribution(std::span<const float> logits, std::span<const int32_t> history,
                           std::span<float> probs) const {
  AUGUR_CHECK(probs.size() == static_cast<size_t>(n_vocab_), "probs must hold n_vocab floats");
  penalise(logits, history);
  std::fill(probs.begin(), probs.end(), 0.0f);
  if (greedy()) {
    probs[argmax(penalised_)] = 1.0f;
    return;
  }

  const float* pen = penalised_.data();
  const ByLogitThenId less{pen};
  int32_t* const order = order_.data();
  std::iota(order_.begin(), order_.end(), 0);
  size_t n_kept = order_.size();
  size_t n_sorted = 0;  // order[0, n_sorted) is sorted and precedes everything after it

  // top-k
  const int top_k = config_.top_k;
  if (top_k > 0 && static_cast<size_t>(top_k) < n_kept) {
    sort_prefix(order, order + top_k, order + n_kept, less);
    n_kept = n_sorted = static_cast<size_t>(top_k);
  }

  // top-p: softmax of the (untempered) candidates, then the shortest sorted prefix with mass
  // >= top_p. Sorting grows only as far as the walk reaches.
  if (config_.top_p < 1.0f && n_kept > 1) {
    float max_logit = -std::numeric_limits<float>::infinity();
    for (size_t pos = 0; pos < n_kept; ++pos) max_logit = std::max(max_logit, pen[order[pos]]);
    double sum = 0.0;
    for (size_t pos = 0; pos < n_kept; ++pos) sum += std::exp(pen[order[pos]] - max_logit);

    const double top_p = config_.top_p;
    double cumulative = 0.0;
    for (size_t pos = 0; pos < n_kept; ++pos) {
      if (pos == n_sorted) {
        const size_t grown = std::max({kTopPFirstChunk, 4 * n_sorted, pos + 1});
        const size_t new_end = std::min(n_kept, grown);
        sort_prefix(order + n_sorted, order + new_end, order + n_kept, less);
        n_sorted = new_end;
      }
      cumulative += std::exp(pen[order[pos]] - max_logit) / sum;
      if (cumulative >= top_p) {
        n_kept = pos + 1;
        break;
      }
    }
  }

  // min-p: p_i >= min_p * p_max  <=>  logit_i >= max_logit + log(min_p); the max always stays.
  if (config_.min_p > 0.0f && n_kept > 1) {
    float max_logit = -std::numeric_limits<float>::infinity();
    for (size_t pos = 0; pos < n_kept; ++pos) max_logit = std::max(max_logit, pen[order[pos]]);
    const float min_logit = max_logit + std::log(config_.min_p);
    size_t n_pass = 0;
    for (size_t pos = 0; pos < n_kept; ++pos) {
      if (pen[order[pos]] >= min_logit) order[n_pass++] = order[pos];
    }
    n_kept = n_pass;
  }

  // temperature, then softmax over the survivors. Dividing by a positive temperature keeps the
  // order, so the scaled maximum is the maximum scaled logit.
  const float temperature = config_.temperature;
  float max_logit = -std::numeric_limits<float>::infinity();
  for (size_t pos = 0; pos < n_kept; ++pos) max_logit = std::max(max_logit, pen[order[pos]]);
  const float max_scaled = max_logit / temperature;
  double sum = 0.0;
  for (size_t pos = 0; pos < n_kept; ++pos) {
    const int32_t token = order[pos];
    const float weight = std::exp(pen[token] / temperature - max_scaled);
    probs[token] = weight;
    sum += weight;
  }
  const double scale = 1.0 / sum;  // sum >= 1: the maximum contributes exp(0)
  for (size_t pos = 0; pos < n_kept; ++pos) {
    const int32_t token = order[pos];
    probs[token] = static_cast<float>(probs[token] * scale);
  }
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history, Rng& rng,
                        std::span<float> probs_out) const {
  AUGUR_CHECK(probs_out.empty() || probs_out.size() == static_cast<size_t>(n_vocab_),
              "probs_out must be empty or hold n_vocab floats");
  if (greedy()) {
    penalise(logits, history);
    const int32_t token = argmax(penalised_);
    if (!probs_out.empty()) {
      std::fill(probs_out.begin(), probs_out.end(), 0.0f);
      probs_out[token] = 1.0f;
    }
    return token;
  }
  const std::span<float> probs = probs_out.empty() ? std::span<float>(probs_) : probs_out;
  distribution(logits, history, probs);
  return draw(probs, rng);
}

}  // namespace augur::sampling
