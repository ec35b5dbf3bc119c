// Causal multi-head attention with grouped KV heads over a Memory's rows.
#pragma once

#include <cstdint>

#include "kernels/thread_pool.h"
#include "model/hparams.h"
#include "model/memory.h"

namespace augur::model::blocks {

// out[i, h] = softmax(q[i, h] · K[0..n_past+i] / sqrt(head_dim)) · V[0..n_past+i] for each batch
// row i < M and query head h; query head h reads kv head h / (n_head / n_head_kv).
// The batch's own K/V rows must already be written at rows n_past.. of `memory`.
void attention(const float* q, Memory& memory, int layer, int64_t n_past, int64_t M,
               const HParams& hp, float* out, kernels::ThreadPool& pool);

}  // namespace augur::model::blocks
