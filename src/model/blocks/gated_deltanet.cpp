#include "model/blocks/gated_deltanet.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "kernels/matmul.h"
#include "model/blocks/ops.h"
#include "model/blocks/weights.h"

namespace augur::model::blocks {
namespace {

// As ggml's CPU ops (expf, log1pf; softplus is the identity above 20).
float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}
float silu(float x) {
  return x / (1.0f + std::exp(-x));
}
float softplus(float x) {
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

// x / max(||x||, eps), the sum in double as ggml_l2_norm.
void l2_normalize(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

// One row of the causal conv: reads the window before the row, writes the window after it, and
// turns `mixed` (the row's projections) into silu(conv).
void conv_row(const GatedDeltaNetWeights& w, const GatedDeltaNetShape& shape, const float* before,
              float* after, float* mixed) {
  const int64_t K = shape.conv_kernel, W = K - 1;
  for (int64_t ch = 0; ch < shape.channels(); ++ch) {
    const float* window = before + ch * W;
    const float* kernel = &w.conv[static_cast<size_t>(ch * K)];
    float sum = 0.0f;
    for (int64_t j = 0; j < W; ++j) sum += window[j] * kernel[j];
    sum += mixed[ch] * kernel[W];
    if (W > 0) {
      std::copy(window + 1, window + W, after + ch * W);
      after[ch * W + W - 1] = mixed[ch];
    }
    mixed[ch] = silu(sum);
  }
}

// One value head, one row: S (in `before`) -> S' (in `after`), and o.
void delta_rule_row(const GatedDeltaNetShape& shape, const float* S_in, float* S, const float* q,
                    const float* k, const float* v, float beta, float g, float* o) {
  const int64_t dk = shape.head_k_dim, dv = shape.head_v_dim;
  const float decay = std::exp(g);
  // Fixed-size scratch would do for real models; a vector keeps any head size legal.
  thread_local std::vector<float> delta;
  delta.assign(static_cast<size_t>(dv), 0.0f);
  for (int64_t i = 0; i < dk; ++i) {
    const float* in = S_in + i * dv;
    float* s = S + i * dv;
    for (int64_t j = 0; j < dv; ++j) {
      s[j] = in[j] * decay;
      delta[j] += s[j] * k[i];
    }
  }
  for (int64_t j = 0; j < dv; ++j) delta[j] = (v[j] - delta[j]) * beta;
  std::fill(o, o + dv, 0.0f);
  for (int64_t i = 0; i < dk; ++i) {
    float* s = S + i * dv;
    for (int64_t j = 0; j < dv; ++j) {
      s[j] += k[i] * delta[j];
      o[j] += s[j] * q[i];
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (int64_t j = 0; j < dv; ++j) o[j] *= scale;
}

}  // namespace

GatedDeltaNetWeights load_gated_deltanet(const gguf::File& file, int layer,
                                         const GatedDeltaNetShape& shape) {
  auto name = [&](const char* n) { return layer_tensor(layer, n); };
  GatedDeltaNetWeights w;
  w.w_qkv = load_matrix(file, name("attn_qkv.weight"), shape.n_embd, shape.channels());
  w.w_gate = load_matrix(file, name("attn_gate.weight"), shape.n_embd, shape.value_dim());
  w.w_beta = load_matrix(file, name("ssm_beta.weight"), shape.n_embd, shape.n_v_heads);
  w.w_alpha = load_matrix(file, name("ssm_alpha.weight"), shape.n_embd, shape.n_v_heads);
  w.w_out = load_matrix(file, name("ssm_out.weight"), shape.value_dim(), shape.n_embd);
  w.conv = load_floats(file, name("ssm_conv1d.weight"), {shape.conv_kernel, shape.channels()});
  w.dt_bias = load_vector(file, name("ssm_dt.bias"), shape.n_v_heads);
  w.a = load_vector(file, name("ssm_a"), shape.n_v_heads);
  w.norm = load_vector(file, name("ssm_norm.weight"), shape.head_v_dim);
  return w;
}

GatedDeltaNetScratch::GatedDeltaNetScratch(const GatedDeltaNetShape& shape, int64_t max_rows)
    : mixed(static_cast<size_t>(max_rows * shape.channels())),
      z(static_cast<size_t>(max_rows * shape.value_dim())),
      beta(static_cast<size_t>(max_rows * shape.n_v_heads)),
      gate(beta.size()),
      out(z.size()) {}

int64_t GatedDeltaNetScratch::bytes() const {
  return static_cast<int64_t>(
      (mixed.capacity() + z.capacity() + beta.capacity() + gate.capacity() + out.capacity()) *
      sizeof(float));
}

void gated_deltanet(const GatedDeltaNetWeights& w, const GatedDeltaNetShape& shape, int layer,
                    const float* x, int64_t M, std::span<const MemorySegment> segments,
                    std::span<const int64_t> n_past, GatedDeltaNetScratch& scratch, float* out,
                    kernels::ThreadPool& pool) {
  const int64_t C = shape.channels(), H = shape.n_v_heads, dk = shape.head_k_dim;
  const int64_t dv = shape.head_v_dim, key_dim = shape.key_dim();
  kernels::matmul(w.w_qkv, x, M, scratch.mixed.data(), pool);
  kernels::matmul(w.w_gate, x, M, scratch.z.data(), pool);
  kernels::matmul(w.w_beta, x, M, scratch.beta.data(), pool);
  kernels::matmul(w.w_alpha, x, M, scratch.gate.data(), pool);
  for (int64_t row = 0; row < M; ++row) {
    for (int64_t h = 0; h < H; ++h) {
      float& beta = scratch.beta[row * H + h];
      float& g = scratch.gate[row * H + h];
      beta = sigmoid(beta);
      g = softplus(g + w.dt_bias[h]) * w.a[h];
    }
  }
  for (size_t s = 0; s < segments.size(); ++s) {
    Memory& memory = *segments[s].memory;
    const int64_t first = segments[s].first_row, n = segments[s].n_rows;
    // The conv windows row by row, then q and k normalised, each head's recurrence over the rows.
    for (int64_t i = 0; i < n; ++i) {
      float* mixed = &scratch.mixed[(first + i) * C];
      conv_row(w, shape, memory.state(layer, n_past[s] + i), memory.state(layer, n_past[s] + i + 1),
               mixed);
      for (int64_t head = 0; head < 2 * shape.n_k_heads; ++head) {
        l2_normalize(mixed + head * dk, dk, shape.eps);
      }
    }
    pool.parallel_for(H, [&](int64_t begin, int64_t end) {
      for (int64_t h = begin; h < end; ++h) {
        const int64_t kh = h % shape.n_k_heads;  // tiled, as the GGUF converter orders heads
        const int64_t s_offset = shape.conv_floats() + h * dk * dv;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t row = first + i;
          const float* mixed = &scratch.mixed[row * C];
          delta_rule_row(shape, memory.state(layer, n_past[s] + i) + s_offset,
                         memory.state(layer, n_past[s] + i + 1) + s_offset, mixed + kh * dk,
                         mixed + key_dim + kh * dk, mixed + 2 * key_dim + h * dv,
                         scratch.beta[row * H + h], scratch.gate[row * H + h],
                         &scratch.out[row * shape.value_dim() + h * dv]);
        }
      }
    });
  }
  for (int64_t row = 0; row < M; ++row) {
    for (int64_t h = 0; h < H; ++h) {
      float* o = &scratch.out[row * shape.value_dim() + h * dv];
      const float* z = &scratch.z[row * shape.value_dim() + h * dv];
      rms_norm(o, w.norm.data(), o, dv, shape.eps);
      for (int64_t j = 0; j < dv; ++j) o[j] *= silu(z[j]);
    }
  }
  kernels::matmul(w.w_out, scratch.out.data(), M, out, pool);
}

}  // namespace augur::model::blocks
