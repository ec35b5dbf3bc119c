#include "model/blocks/moe.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "common/error.h"
#include "kernels/matmul.h"
#include "model/blocks/ops.h"
#include "model/blocks/weights.h"

namespace augur::model::blocks {
namespace {

// Tensor blk.<layer>.<name>, whose shape must be `expected` (ggml ne order).
const gguf::TensorInfo& checked_tensor(const gguf::File& file, int layer, const char* name,
                                       const std::vector<int64_t>& expected) {
  const auto& t = file.tensor(fmt::format("blk.{}.{}", layer, name));
  if (t.ne != expected) {
    throw FormatError(fmt::format("{}: tensor '{}': shape [{}], expected [{}]", file.path(), t.name,
                                  fmt::join(t.ne, ", "), fmt::join(expected, ", ")));
  }
  return t;
}

// The probability a NaN is ranked by: below every number.
float rank_of(float p) {
  return std::isnan(p) ? -std::numeric_limits<float>::infinity() : p;
}

}  // namespace

MoeWeights load_moe_weights(const gguf::File& file, int layer, const HParams& hp) {
  const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff_exp, n_expert = hp.n_expert;
  MoeWeights w;
  w.router =
      tensor::Matrix::from(checked_tensor(file, layer, "ffn_gate_inp.weight", {n_embd, n_expert}));
  const auto& gate = checked_tensor(file, layer, "ffn_gate_exps.weight", {n_embd, n_ff, n_expert});
  const auto& up = checked_tensor(file, layer, "ffn_up_exps.weight", {n_embd, n_ff, n_expert});
  const auto& down = checked_tensor(file, layer, "ffn_down_exps.weight", {n_ff, n_embd, n_expert});
  for (int64_t expert = 0; expert < n_expert; ++expert) {
    w.gate.push_back(packed_for_kernels(file, tensor::Matrix::slice_of(gate, expert)));
    w.up.push_back(packed_for_kernels(file, tensor::Matrix::slice_of(up, expert)));
    w.down.push_back(packed_for_kernels(file, tensor::Matrix::slice_of(down, expert)));
  }
  return w;
}

void route_row(std::span<float> logits, std::span<int32_t> experts, std::span<float> weights,
               std::span<int32_t> order) {
  const auto n_expert = static_cast<int64_t>(logits.size());
  const auto k = static_cast<int64_t>(experts.size());
  AUGUR_CHECK(
      k >= 1 && k <= n_expert && weights.size() == experts.size() && order.size() == logits.size(),
      "route_row: k experts of n_expert, one weight each");
  // ggml_soft_max: exp(x - max) summed in double, then scaled by the float of 1 / sum.
  float max = -std::numeric_limits<float>::infinity();
  for (const float v : logits) max = std::max(max, v);
  double sum = 0.0;
  for (float& v : logits) {
    v = std::exp(v - max);
    sum += v;
  }
  const auto scale = static_cast<float>(1.0 / sum);
  for (float& v : logits) v *= scale;

  // A total order (probability descending, then index), so the first k do not depend on how
  // partial_sort breaks ties.
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    const float pa = rank_of(logits[static_cast<size_t>(a)]);
    const float pb = rank_of(logits[static_cast<size_t>(b)]);
    return pa > pb || (pa == pb && a < b);
  });
  // Renormalise as ggml: the row sum in double, rounded to float, then one division each.
  double selected = 0.0;
  for (int64_t slot = 0; slot < k; ++slot) {
    experts[slot] = order[slot];
    weights[slot] = logits[static_cast<size_t>(order[slot])];
    selected += weights[slot];
  }
  // The top-1 probability is at least 1 / n_expert: no division by zero.
  const auto total = static_cast<float>(selected);
  for (float& weight : weights) weight /= total;
}

MoeScratch::MoeScratch(const HParams& hp, int64_t max_rows_)
    : max_rows(max_rows_),
      k(hp.n_expert_used),
      probs(static_cast<size_t>(max_rows * hp.n_expert)),
      experts(static_cast<size_t>(max_rows * hp.n_expert_used)),
      weights(static_cast<size_t>(max_rows * hp.n_expert_used)),
      order(static_cast<size_t>(hp.n_expert)),
      first(static_cast<size_t>(hp.n_expert + 1)),
      routed(static_cast<size_t>(max_rows * hp.n_expert_used)),
      rows_in(static_cast<size_t>(max_rows * hp.n_embd)),
      gate(static_cast<size_t>(max_rows * hp.n_ff_exp)),
      up(static_cast<size_t>(max_rows * hp.n_ff_exp)),
      rows_out(static_cast<size_t>(max_rows * hp.n_embd)),
      slot_out(static_cast<size_t>(max_rows * hp.n_expert_used * hp.n_embd)) {
  AUGUR_CHECK(max_rows * k <= std::numeric_limits<int32_t>::max(), "(row, slot) pairs fit int32");
}

int64_t MoeScratch::bytes() const {
  const auto size = [](const auto& v) { return static_cast<int64_t>(v.capacity() * sizeof(v[0])); };
  return size(probs) + size(experts) + size(weights) + size(order) + size(first) + size(routed) +
         size(rows_in) + size(gate) + size(up) + size(rows_out) + size(slot_out);
}

void moe_ffn(const MoeWeights& w, const float* x, int64_t M, float* out, MoeScratch& s,
             kernels::ThreadPool& pool) {
  AUGUR_CHECK(M > 0 && M <= s.max_rows, "MoE rows within the scratch");
  const int64_t n_expert = w.router.rows, n_embd = w.router.cols;
  const int64_t n_ff = w.gate.front().rows;
  const int64_t k = s.k;

  kernels::matmul(w.router, x, M, s.probs.data(), pool);
  for (int64_t row = 0; row < M; ++row) {
    route_row(std::span(&s.probs[row * n_expert], n_expert), std::span(&s.experts[row * k], k),
              std::span(&s.weights[row * k], k), s.order);
  }

  // Counting sort of the (row, slot) pairs by expert; rows stay ascending within an expert.
  std::fill(s.first.begin(), s.first.end(), 0);
  for (int64_t i = 0; i < M * k; ++i) ++s.first[s.experts[i] + 1];
  for (int64_t expert = 0; expert < n_expert; ++expert) s.first[expert + 1] += s.first[expert];
  for (int64_t i = 0; i < M * k; ++i) {
    // Advance the expert's start while filling; restored below.
    s.routed[s.first[s.experts[i]]++] = static_cast<int32_t>(i);
  }
  for (int64_t expert = n_expert; expert > 0; --expert) s.first[expert] = s.first[expert - 1];
  s.first[0] = 0;

  for (int64_t expert = 0; expert < n_expert; ++expert) {
    const int64_t begin = s.first[expert];
    // A row picks an expert at most once, so at most M rows, and the buffers hold max_rows.
    const int64_t n_rows = s.first[expert + 1] - begin;
    if (n_rows == 0) continue;
    for (int64_t i = 0; i < n_rows; ++i) {
      const int64_t row = s.routed[begin + i] / k;
      std::memcpy(&s.rows_in[i * n_embd], x + row * n_embd, sizeof(float) * n_embd);
    }
    kernels::matmul(w.gate[expert], s.rows_in.data(), n_rows, s.gate.data(), pool);
    kernels::matmul(w.up[expert], s.rows_in.data(), n_rows, s.up.data(), pool);
    silu_mul(s.gate.data(), s.up.data(), n_rows * n_ff);
    kernels::matmul(w.down[expert], s.gate.data(), n_rows, s.rows_out.data(), pool);
    for (int64_t i = 0; i < n_rows; ++i) {
      const int32_t row_slot = s.routed[begin + i];
      const float weight = s.weights[row_slot];
      const float* y = &s.rows_out[i * n_embd];
      float* dst = &s.slot_out[row_slot * n_embd];
      for (int64_t c = 0; c < n_embd; ++c) dst[c] = y[c] * weight;
    }
  }

  // x is no longer read: out may alias it.
  for (int64_t row = 0; row < M; ++row) {
    float* dst = out + row * n_embd;
    const float* slots = &s.slot_out[row * k * n_embd];
    std::memcpy(dst, slots, sizeof(float) * n_embd);
    for (int64_t slot = 1; slot < k; ++slot) {
      for (int64_t c = 0; c < n_embd; ++c) dst[c] += slots[slot * n_embd + c];
    }
  }
}

}  // namespace augur::model::blocks
