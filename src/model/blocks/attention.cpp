#include "model/blocks/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "kernels/attention_ops.h"
#include "kernels/attention_quantized_keys.h"
#include "kernels/quantize_activations.h"
#include "tensor/blocks.h"
#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace augur::model::blocks {
namespace {

// Queries that read a kv head's rows together: its query heads times a few batch rows, so each
// key and value row is loaded once per L1 visit for all of them (the kernels share reads only,
// never arithmetic).
constexpr int64_t kSharedQueries = 4;
// Most query heads per kv head attention_gathered takes (GQA groups in use are 1..16).
constexpr int64_t kMaxGroup = 64;

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

// Key rows [first, first + n) of one kv head as stored bytes, contiguous: in place unless they wrap
// around the ring, else copied into `buffer`. [n, k_row_bytes]
const uint8_t* gather_key_bytes(const KvRows& kv, int64_t head, int64_t first, int64_t n,
                                std::vector<uint8_t>& buffer) {
  if (first % kv.slots + n <= kv.slots) return kv.key(head, first);
  if (buffer.size() < n * kv.k_row_bytes) buffer.resize(n * kv.k_row_bytes);
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(buffer.data() + i * kv.k_row_bytes, kv.key(head, first + i), kv.k_row_bytes);
  }
  return buffer.data();
}

// Per-thread buffers of attention_gathered, grown to the longest context seen; never per token.
struct GatherScratch {
  std::vector<float> scores, keys, values;
  std::vector<uint8_t> key_bytes;
  std::vector<float> q_f16;     // [group, head_dim] queries rounded to F16 (F16 keys)
  std::vector<int8_t> q_codes;  // [group, head_dim] queries in Q8_0 (Q8_0/Q4_0 keys)
  std::vector<float> q_scales;  // [group, head_dim / 32]
};

// scores[i * n + key] = q_i . K[first + key] * scale for the `group` query heads of one kv head
// (contiguous q rows), with q converted to K's vec_dot_type as llama.cpp does: F32 keys use q as
// it is; F16 keys see q rounded to F16 (ggml_vec_dot_f16 then has ggml_vec_dot_f32's operations on
// the widened values, which the float kernel repeats); Q8_0/Q4_0 keys see q in Q8_0 and integer
// block dots (kernels/attention_quantized_keys.h).
void key_scores(const float* q, int64_t group, const KvRows& kv, int64_t head, int64_t first,
                int64_t n, int64_t head_dim, float scale, GatherScratch& s) {
  const gguf::TensorType type = kv.k_type;
  if (type == gguf::TensorType::Q8_0 || type == gguf::TensorType::Q4_0) {
    s.q_codes.resize(group * head_dim);
    s.q_scales.resize(group * head_dim / 32);
    kernels::quantize_rows_q8_0(q, group, head_dim, s.q_codes.data(), s.q_scales.data());
    const uint8_t* keys = gather_key_bytes(kv, head, first, n, s.key_bytes);
    kernels::attention_scores_q8(type, s.q_codes.data(), s.q_scales.data(), group, keys,
                                 kv.k_row_bytes, n, head_dim, scale, s.scores.data());
    return;
  }
  const float* queries = q;
  if (type == gguf::TensorType::F16) {
    s.q_f16.resize(group * head_dim);
    for (int64_t i = 0; i < group * head_dim; ++i) {
      s.q_f16[i] = tensor::fp16_to_fp32(tensor::fp32_to_fp16(q[i]));
    }
    queries = s.q_f16.data();
  }
  const float* keys = gather(true, kv, head, first, n, head_dim, s.keys);
  const float* q_rows[kMaxGroup];
  float* score_rows[kMaxGroup];
  int64_t n_keys[kMaxGroup];
  for (int64_t i = 0; i < group; ++i) {
    q_rows[i] = queries + i * head_dim;
    score_rows[i] = s.scores.data() + i * n;
    n_keys[i] = n;
  }
  kernels::attention_scores_multi(q_rows, group, keys, n_keys, head_dim, scale, score_rows);
}

// Any layer: each (kv head, batch row) gathers the rows that row sees, in row order. Values of any
// type are decoded to floats and weighted in float (llama.cpp allows a quantized V only with flash
// attention, which also widens V rows to f32 before accumulating them).
void attention_gathered(const float* q, const KvRows& kv, int64_t n_past, int64_t M,
                        const HParams& hp, float* out, kernels::ThreadPool& pool) {
  const int64_t head_dim = hp.head_dim;
  const int64_t q_dim = hp.q_dim();
  const int64_t group = hp.n_head / hp.n_head_kv;
  AUGUR_CHECK(group <= kMaxGroup, "query heads per kv head within kMaxGroup");
  const float scale = kq_scale(hp);
  pool.parallel_for(hp.n_head_kv * M, [&](int64_t begin, int64_t end) {
    thread_local GatherScratch s;
    float* score_rows[kMaxGroup];
    float* out_rows[kMaxGroup];
    int64_t n_keys[kMaxGroup];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t kv_head = item / M;
      const int64_t row = balanced(item % M, M);
      const int64_t last = n_past + row;
      const int64_t first = kv.first_visible(last);
      const int64_t n = last - first + 1;
      if (static_cast<int64_t>(s.scores.size()) < group * n) s.scores.resize(group * n);
      for (int64_t i = 0; i < group; ++i) {
        const int64_t head = kv_head * group + i;
        out_rows[i] = out + row * q_dim + head * head_dim;
        score_rows[i] = s.scores.data() + i * n;
        n_keys[i] = n;
      }
      const float* q_group = q + row * q_dim + kv_head * group * head_dim;  // [group, head_dim]
      key_scores(q_group, group, kv, kv_head, first, n, head_dim, scale, s);
      const float* values = gather(false, kv, kv_head, first, n, head_dim, s.values);
      for (int64_t i = 0; i < group; ++i) {
        kernels::softmax_inplace(score_rows[i], n);
        std::fill(out_rows[i], out_rows[i] + head_dim, 0.0f);
      }
      kernels::attention_weighted_sum_multi(score_rows, group, values, n_keys, head_dim, out_rows);
    }
  });
}

// One K or V row in the cache type, quantized as llama.cpp's cache write does (ggml-cpu's
// from_float of the type): Q8_0 by the x86 quantize_row_q8_0 (rounding to nearest even, which
// kernels::quantize_rows_q8_0 repeats), the others by the reference quantizers.
void store_row(gguf::TensorType type, const float* x, uint8_t* dst, int64_t n) {
  if (type == gguf::TensorType::F32) {
    std::memcpy(dst, x, sizeof(float) * n);
  } else if (type == gguf::TensorType::Q8_0) {
    thread_local std::vector<int8_t> codes;  // [n]
    thread_local std::vector<float> scales;  // [n / 32]
    codes.resize(n);
    scales.resize(n / 32);
    kernels::quantize_rows_q8_0(x, 1, n, codes.data(), scales.data());
    auto* blocks = reinterpret_cast<tensor::BlockQ8_0*>(dst);
    for (int64_t b = 0; b < n / 32; ++b) {
      blocks[b].d = tensor::fp32_to_fp16(scales[b]);  // exact: the scale is an fp16 value
      std::memcpy(blocks[b].qs, codes.data() + 32 * b, 32);
    }
  } else {
    tensor::quantize_row(type, x, dst, n);
  }
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
  store_row(kv.k_type, k, kv.key(head, row), head_dim);
  store_row(kv.v_type, v, kv.value(head, row), head_dim);
}

}  // namespace augur::model::blocks
