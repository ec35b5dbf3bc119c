// Row-wise building blocks of a decoder layer, in F32, matching llama.cpp's CPU semantics
// (double accumulation in RMSNorm, RoPE angles by float recurrence as ggml_rope_cache_init).
#pragma once

#include <cstdint>
#include <span>

#include "model/hparams.h"

namespace augur::model::blocks {

// y = x / sqrt(mean(x^2) + eps) * w, for one row of n. y may alias x.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);

// cos/sin of each rotated pair at `position`: cos_sin [n_rot/2, 2].
void rope_angles(int32_t position, int64_t n_rot, float base, float* cos_sin);

// Rotates the first n_rot dims of each of `n_heads` heads (head_dim apart) in place.
void apply_rope(float* heads, int64_t n_heads, int64_t head_dim, int64_t n_rot, RopeType type,
                const float* cos_sin);

// gate[i] = silu(gate[i]) * up[i]
void silu_mul(float* gate, const float* up, int64_t n);

// gate[i] = gelu_tanh(gate[i]) * up[i] as llama.cpp's CPU geglu computes it: the GELU of the
// input rounded to FP16, read from a table of FP16 results, for -10 < x < 10; x above, 0 below.
void gelu_mul(float* gate, const float* up, int64_t n);

// x[i] = c * tanh(x[i] / c)
void softcap(float* x, int64_t n, float c);

}  // namespace augur::model::blocks
