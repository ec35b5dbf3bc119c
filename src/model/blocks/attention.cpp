#include "model/blocks/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention_ops.h"
#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace augur::model::blocks {
namespace {

// Queries that read a kv head's rows together: its query heads times a few batch rows, so each
// key and value row is loaded once per L1 visit for all of them (the kernels share reads only,
// never arithmetic).
constexpr int64_t kSharedQueries = 4;

// Index of the slot-th item in the order 0, n-1, 1, n-2, ...: batch row i attends to n_past+i+1
// keys, so in this order any run of slots costs about the same per slot, and the pool's
// contiguous chunks get equal work.
int64_t balanced(int64_t slot, int64_t n) {
  return slot % 2 == 0 ? slot / 2 : n - 1 - slot / 2;
}

float kq_scale(const HParams& hp) {
  return hp.attn_scale > 0 ? hp.attn_scale : 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
}

// Every row visible, F32 rows in row order: the rows are the kernel's key array as they lie.
void attention_full_f32(const float* q, const KvRows& kv, int64_t n_past, int64_t M,
                        const HParams& hp, float* out, kernels::ThreadPool& pool) {
  const int64_t head_dim = hp.head_dim;
  const int64_t q_dim = hp.q_dim();
  const int64_t group = hp.n_head / hp.n_head_kv;
  const float scale = kq_scale(hp);
  // Work items are (kv head, its query heads in sets of up to kSharedQueries, block of rows),
  // kv-head-major, each holding heads_per_item heads for rows_per_block rows. Every (row, head)
  // is computed on its own, so a row's result does not depend on M, on the blocks, or on the
  // thread that runs it.
  const int64_t heads_per_item = std::min(group, kSharedQueries);
  const int64_t head_sets = (group + heads_per_item - 1) / heads_per_item;
  const int64_t rows_per_block = std::max<int64_t>(1, kSharedQueries / heads_per_item);
  const int64_t n_blocks = (M + rows_per_block - 1) / rows_per_block;
  pool.parallel_for(hp.n_head_kv * head_sets * n_blocks, [&](int64_t begin, int64_t end) {
    // Per-thread score rows, grown once to the longest context seen; never per token.
    thread_local std::vector<float> scores;  // [kSharedQueries, n_past + M]
    const int64_t stride = n_past + M;
    if (static_cast<int64_t>(scores.size()) < kSharedQueries * stride) {
      scores.resize(kSharedQueries * stride);
    }
    const float* q_rows[kSharedQueries];
    float* score_rows[kSharedQueries];
    float* out_rows[kSharedQueries];
    int64_t n_keys[kSharedQueries];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t kv_head = item / (head_sets * n_blocks);
      const int64_t head_set = item / n_blocks % head_sets;
      const int64_t block = balanced(item % n_blocks, n_blocks);
      const int64_t first_head = kv_head * group + head_set * heads_per_item;
      const int64_t last_head = std::min((kv_head + 1) * group, first_head + heads_per_item);
      const int64_t first_row = block * rows_per_block;
      const int64_t last_row = std::min(M, first_row + rows_per_block);
      int64_t n_queries = 0;
      for (int64_t row = first_row; row < last_row; ++row) {
        for (int64_t head = first_head; head < last_head; ++head) {
          q_rows[n_queries] = q + row * q_dim + head * head_dim;
          out_rows[n_queries] = out + row * q_dim + head * head_dim;
          score_rows[n_queries] = scores.data() + n_queries * stride;
          n_keys[n_queries] = n_past + row + 1;
          ++n_queries;
        }
      }
      const auto* keys = reinterpret_cast<const float*>(kv.key(kv_head, 0));
      const auto* values = reinterpret_cast<const float*>(kv.value(kv_head, 0));
      kernels::attention_scores_multi(q_rows, n_queries, keys, n_keys, head_dim, scale, score_rows);
      for (int64_t query = 0; query < n_queries; ++query) {
        kernels::softmax_inplace(score_rows[query], n_keys[query]);
        std::fill(out_rows[query], out_rows[query] + head_dim, 0.0f);
      }
      kernels::attention_weighted_sum_multi(score_rows, n_queries, values, n_keys, head_dim,
                                            out_rows);
    }
  });
}

// Rows [first, first + n) of one kv head's keys (or values) as contiguous floats: in place when
// they are F32 and do not wrap around the ring, else decoded into `buffer`.
const float* gather(bool keys, const KvRows& kv, int64_t head, int64_t first, int64_t n,
                    int64_t head_dim, std::vector<float>& buffer) {
  const gguf::TensorType type = keys ? kv.k_type : kv.v_type;
  const auto row_ptr = [&](int64_t row) { return keys ? kv.key(head, row) : kv.value(head, row); };
  if (type == gguf::TensorType::F32 && first % kv.slots + n <= kv.slots) {
    return reinterpret_cast<const float*>(row_ptr(first));
  }
  if (static_cast<int64_t>(buffer.size()) < n * head_dim) buffer.resize(n * head_dim);
  for (int64_t i = 0; i < n; ++i) {
    tensor::dequantize_row(type, row_ptr(first + i), buffer.data() + i * head_dim, head_dim);
  }
  return buffer.data();
}

// Any layer: each (kv head, batch row) gathers the rows that row sees, in row order.
void attention_gathered(const float* q, const KvRows& kv, int64_t n_past, int64_t M,
                        const HParams& hp, float* out, kernels::ThreadPool& pool) {
  const int64_t head_dim = hp.head_dim;
  const int64_t q_dim = hp.q_dim();
  const int64_t group = hp.n_head / hp.n_head_kv;
  const float scale = kq_scale(hp);
  pool.parallel_for(hp.n_head_kv * M, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores, key_buffer, value_buffer;
    std::vector<const float*> q_rows(static_cast<size_t>(group));
    std::vector<float*> score_rows(static_cast<size_t>(group)), out_rows(q_rows.size());
    std::vector<int64_t> n_keys(q_rows.size());
    for (int64_t item = begin; item < end; ++item) {
      const int64_t kv_head = item / M;
      const int64_t row = balanced(item % M, M);
      const int64_t last = n_past + row;
      const int64_t first = kv.first_visible(last);
      const int64_t n = last - first + 1;
      if (static_cast<int64_t>(scores.size()) < group * n) scores.resize(group * n);
      for (int64_t i = 0; i < group; ++i) {
        const int64_t head = kv_head * group + i;
        q_rows[i] = q + row * q_dim + head * head_dim;
        out_rows[i] = out + row * q_dim + head * head_dim;
        score_rows[i] = scores.data() + i * n;
        n_keys[i] = n;
      }
      const float* keys = gather(true, kv, kv_head, first, n, head_dim, key_buffer);
      kernels::attention_scores_multi(q_rows.data(), group, keys, n_keys.data(), head_dim, scale,
                                      score_rows.data());
      const float* values = gather(false, kv, kv_head, first, n, head_dim, value_buffer);
      for (int64_t i = 0; i < group; ++i) {
        kernels::softmax_inplace(score_rows[i], n);
        std::fill(out_rows[i], out_rows[i] + head_dim, 0.0f);
      }
      kernels::attention_weighted_sum_multi(score_rows.data(), group, values, n_keys.data(),
                                            head_dim, out_rows.data());
    }
  });
}

}  // namespace

void attention(const float* q, Memory& memory, int layer, int64_t n_past, int64_t M,
               const HParams& hp, float* out, kernels::ThreadPool& pool) {
  const KvRows kv = memory.kv(layer);
  if (kv.window == 0 && kv.k_type == gguf::TensorType::F32 && kv.v_type == gguf::TensorType::F32 &&
      kv.slots >= n_past + M) {
    attention_full_f32(q, kv, n_past, M, hp, out, pool);
  } else {
    attention_gathered(q, kv, n_past, M, hp, out, pool);
  }
}

void write_kv(const KvRows& kv, int64_t head, int64_t row, const float* k, const float* v,
              int64_t head_dim) {
  if (kv.k_type == gguf::TensorType::F32) {
    std::memcpy(kv.key(head, row), k, sizeof(float) * head_dim);
  } else {
    tensor::quantize_row(kv.k_type, k, kv.key(head, row), head_dim);
  }
  if (kv.v_type == gguf::TensorType::F32) {
    std::memcpy(kv.value(head, row), v, sizeof(float) * head_dim);
  } else {
    tensor::quantize_row(kv.v_type, v, kv.value(head, row), head_dim);
  }
}

}  // namespace augur::model::blocks
