// The Gated DeltaNet mixer of Qwen3.5's linear-attention layers. For each row t:
//   mixed = W_qkv u, z = W_gate u; c = silu(causal depthwise conv over [window | mixed]) split
//   into q, k (n_k_heads x head_k_dim, L2-normalised per head) and v (n_v_heads x head_v_dim);
//   beta = sigmoid(W_beta u), g = softplus(W_alpha u + dt_bias) * a; per value head h (q/k head
//   h % n_k_heads): S <- S exp(g); delta = (v - S^T k) beta; S <- S + k delta^T;
//   o = S^T q / sqrt(head_k_dim); out = W_out concat_h(RMSNorm(o_h, norm) * silu(z_h)).
// Rows go through the single-token recurrence one after another (never a chunked form), so the
// state after row i of an M-row forward is bitwise the state after row i fed alone: a speculative
// verify leaves exactly the cache an autoregressive run leaves. Projections are matmuls over all
// rows (batch-invariant kernels).
// A layer's state (Memory::state) is one float array: [conv channels, kernel - 1] (the last
// kernel - 1 inputs of each channel, oldest first) followed by S of each value head
// [head_k_dim, head_v_dim].
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gguf/file.h"
#include "kernels/thread_pool.h"
#include "model/model.h"
#include "tensor/matrix.h"

namespace augur::model::blocks {

struct GatedDeltaNetShape {
  int64_t n_embd = 0;
  int64_t conv_kernel = 0;  // ssm.conv_kernel
  int64_t head_k_dim = 0;   // ssm.state_size
  int64_t n_k_heads = 0;    // ssm.group_count
  int64_t n_v_heads = 0;    // ssm.time_step_rank
  int64_t head_v_dim = 0;   // ssm.inner_size / n_v_heads
  float eps = 1e-6f;        // RMSNorm of o, and the floor of the q/k L2 norms

  int64_t key_dim() const { return n_k_heads * head_k_dim; }
  int64_t value_dim() const { return n_v_heads * head_v_dim; }
  int64_t channels() const { return 2 * key_dim() + value_dim(); }  // q | k | v
  int64_t conv_floats() const { return channels() * (conv_kernel - 1); }
  int64_t state_floats() const { return conv_floats() + n_v_heads * head_k_dim * head_v_dim; }
};

struct GatedDeltaNetWeights {
  tensor::Matrix w_qkv;        // [channels, n_embd]
  tensor::Matrix w_gate;       // [value_dim, n_embd] (z)
  tensor::Matrix w_beta;       // [n_v_heads, n_embd]
  tensor::Matrix w_alpha;      // [n_v_heads, n_embd]
  tensor::Matrix w_out;        // [n_embd, value_dim]
  std::vector<float> conv;     // [channels, conv_kernel]
  std::vector<float> dt_bias;  // [n_v_heads]
  std::vector<float> a;        // [n_v_heads], -exp(A_log)
  std::vector<float> norm;     // [head_v_dim]
};

// blk.<layer>.{attn_qkv, attn_gate, ssm_conv1d, ssm_dt.bias, ssm_a, ssm_beta, ssm_alpha,
// ssm_norm, ssm_out}; FormatError names a tensor whose shape differs from `shape`.
GatedDeltaNetWeights load_gated_deltanet(const gguf::File& file, int layer,
                                         const GatedDeltaNetShape& shape);

// Per-row buffers of one forward, sized for max_rows.
struct GatedDeltaNetScratch {
  GatedDeltaNetScratch() = default;
  GatedDeltaNetScratch(const GatedDeltaNetShape& shape, int64_t max_rows);
  int64_t bytes() const;
  std::vector<float> mixed;       // [max_rows, channels]: projections, then the conv outputs
  std::vector<float> z;           // [max_rows, value_dim]
  std::vector<float> beta, gate;  // [max_rows, n_v_heads]: beta, then g
  std::vector<float> out;         // [max_rows, value_dim]
};

// out[row] (n_embd floats) for the M rows of `x` (normed inputs [M, n_embd]); each segment's rows
// continue the state of its memory at n_past[s] rows and write the state after each of them
// (Memory::state(layer, n_past[s] + i + 1)). `out` may alias `x`: only the projections read it.
void gated_deltanet(const GatedDeltaNetWeights& w, const GatedDeltaNetShape& shape, int layer,
                    const float* x, int64_t M, std::span<const MemorySegment> segments,
                    std::span<const int64_t> n_past, GatedDeltaNetScratch& scratch, float* out,
                    kernels::ThreadPool& pool);

}  // namespace augur::model::blocks
