// Causal multi-head attention with grouped KV heads over a Memory's rows.
#pragma once

#include <cstdint>

#include "kernels/thread_pool.h"
#include "model/hparams.h"
#include "model/memory.h"

namespace augur::model::blocks {

// out[i, h] = softmax(q[i, h] · K[f..n_past+i] · scale) · V[f..n_past+i] for each batch row i < M
// and query head h, where f is the first row the layer lets row n_past+i see (0, or the start of
// its sliding window) and scale is hp.attn_scale or 1/sqrt(head_dim); query head h reads kv head
// h / (n_head / n_head_kv). Keys are always taken in row order from f, whatever ring slots they
// sit in, so a row's result depends only on its own rows, never on M. The batch's own K/V rows
// must already be written at rows n_past.. of `memory`.
void attention(const float* q, Memory& memory, int layer, int64_t n_past, int64_t M,
               const HParams& hp, float* out, kernels::ThreadPool& pool);

// Stores one row's K and V (head_dim floats each) for kv head `head` at memory row `row`, in the
// cache's types.
void write_kv(const KvRows& kv, int64_t head, int64_t row, const float* k, const float* v,
              int64_t head_dim);

}  // namespace augur::model::blocks
