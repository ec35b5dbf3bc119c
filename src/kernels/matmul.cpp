#include "kernels/matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "kernels/quantize_activations.h"

namespace augur::kernels {

namespace {

// Calls rows(begin, end) over [0, n) rows of `row_bytes` each. A matrix streamed from DRAM (8 MB
// and more) goes in chunks of `granule`-aligned rows taken from a shared counter by every thread of
// the pool, about eight per thread, not in one fixed slice per thread: on a shared machine a core
// that is slowed or descheduled for a while leaves its remaining chunks to the others instead of
// holding up the whole product (zoo-wide Q8_0, AMD EPYC Zen 3 VM, 2 threads: median T_V(4) 28.5-
// 32.9 ms against 35.9-42.7). A smaller matrix keeps one slice per thread, which also keeps each
// thread on the same rows from call to call (its L2). A row's result does not depend on its chunk
// (each row is one chain per activation row in every kernel), so this changes no output bit.
template <class Rows>
void for_row_chunks(ThreadPool& pool, int64_t n, size_t row_bytes, int64_t granule,
                    const Rows& rows) {
  constexpr size_t kStreamed = size_t{8} << 20;
  const int64_t threads = pool.size();
  const bool streamed = static_cast<size_t>(n) * row_bytes >= kStreamed && threads > 1;
  // Chunks of a multiple of 16 rows (at least 16) keep every tile shape's row blocks whole.
  const int64_t chunk =
      streamed ? std::max<int64_t>({granule, 16, n / (8 * threads) / 16 * 16}) : granule;
  std::atomic<int64_t> next{0};
  const struct {
    const Rows* rows;
    std::atomic<int64_t>* next;
    int64_t n, chunk, chunks;
  } job{&rows, &next, n, chunk, (n + chunk - 1) / chunk};
  // Captures one pointer, so std::function keeps it inline: no allocation per call.
  const auto* job_ptr = &job;
  if (!streamed) {
    pool.parallel_for(job.chunks, [job_ptr](int64_t begin, int64_t end) {
      (*job_ptr->rows)(begin * job_ptr->chunk, std::min(job_ptr->n, end * job_ptr->chunk));
    });
    return;
  }
  pool.parallel_for(std::min(threads, job.chunks), [job_ptr](int64_t, int64_t) {
    for (int64_t c;
         (c = job_ptr->next->fetch_add(1, std::memory_order_relaxed)) < job_ptr->chunks;) {
      const int64_t begin = c * job_ptr->chunk;
      (*job_ptr->rows)(begin, std::min(job_ptr->n, begin + job_ptr->chunk));
    }
  });
}

// Where the avx512 path reads Q8_0 activations (matmul_kernels.h, xq_blocked ...).
struct Blocked {
  int8_t* codes;  // null: not wanted
  float* scales;
  int32_t* bias;
  int32_t weight_bias;
};

// Copies rows [begin, end) of M quantized activation rows (codes [M, cols], scales [M, cols / 32])
// into the blocked layout, with each block's bias correction -weight_bias * (sum of its codes).
void block_rows(const int8_t* codes, const float* scales, int64_t M, int64_t cols, int64_t begin,
                int64_t end, const Blocked& to) {
  const int64_t blocks = cols / 32;
  for (int64_t m = begin; m < end; ++m) {
    for (int64_t s = 0; s < blocks; ++s) {
      const int8_t* from = codes + m * cols + 32 * s;
      const int64_t at = detail::blocked_index(M, blocks, m, s);
      std::copy(from, from + 32, to.codes + 32 * at);
      to.scales[at] = scales[m * blocks + s];
      int32_t sum = 0;
      for (int i = 0; i < 32; ++i) sum += from[i];
      to.bias[at] = -to.weight_bias * sum;
    }
  }
}

}  // namespace

IntegerOrder integer_order(Isa isa) {
  return isa == Isa::kAmx || isa == Isa::kAvx512 ? IntegerOrder::kBlockSums
                                                 : IntegerOrder::kLaneSums;
}

void matmul(const tensor::Matrix& w, const float* x, int64_t M, float* y, ThreadPool& pool) {
  if (!tensor::has_decoder(w.type)) {
    throw Unsupported(fmt::format("matmul: weight type {} has no kernel", gguf::type_name(w.type)));
  }
  AUGUR_CHECK(M >= 0 && w.rows >= 0 && w.cols >= 0, "matmul shapes must be non-negative");
  if (M == 0 || w.rows == 0) return;
  if (w.cols == 0) {
    std::fill(y, y + M * w.rows, 0.0f);
    return;
  }
  AUGUR_CHECK(w.data != nullptr && x != nullptr && y != nullptr, "matmul needs its buffers");
  AUGUR_CHECK(w.row_bytes == gguf::row_bytes(w.type, w.cols), "row_bytes must match type and cols");

  detail::MatmulArgs args{w.type, w.data, w.row_bytes, w.rows, w.cols, x, M, y};
  // Activations are quantized once per call into per-calling-thread buffers grown to the largest
  // batch seen: decode allocates nothing. The quantize job gets pointers, not the thread_local
  // vectors (a worker would see its own, empty ones), in one struct so the lambda captures a
  // single reference and std::function does not allocate.
  thread_local std::vector<int8_t> codes;
  thread_local std::vector<float> scales;
  thread_local std::vector<int16_t> bsums;
  // The avx512 path reads Q8_0 activations block-major with their bias corrections
  // (matmul_kernels.h), written by the same job right after each row range is quantized.
  thread_local std::vector<int8_t> codes_blocked;
  thread_local std::vector<float> scales_blocked;
  thread_local std::vector<int32_t> bias_blocked;
  const Isa isa = current_isa();
  const bool q8_0 = uses_q8_activations(w.type), q8_k = uses_q8_k_activations(w.type);
  const bool blocked =
      (w.type == gguf::TensorType::Q8_0 || w.type == gguf::TensorType::Q4_0) && isa == Isa::kAvx512;
  if (q8_0 || q8_k) {
    const int64_t block = q8_0 ? 32 : 256;
    codes.resize(static_cast<size_t>(M * w.cols));
    scales.resize(static_cast<size_t>(M * w.cols / block));
    if (q8_k) bsums.resize(static_cast<size_t>(M * w.cols / 16));
    args.xq = codes.data();
    args.xd = scales.data();
    args.xbsums = q8_k ? bsums.data() : nullptr;
    if (blocked) {
      const auto size = static_cast<size_t>(detail::blocked_size(M, w.cols / 32));
      codes_blocked.resize(32 * size);
      scales_blocked.resize(size);
      bias_blocked.resize(size);
      args.xq_blocked = codes_blocked.data();
      args.xd_blocked = scales_blocked.data();
      args.xbias_blocked = bias_blocked.data();
    }
    const struct {
      const float* x;
      int8_t* codes;
      float* scales;
      int16_t* bsums;
      int64_t M, cols, block;
      Blocked blocked;
    } rows{x,
           codes.data(),
           scales.data(),
           args.xbsums ? bsums.data() : nullptr,
           M,
           w.cols,
           block,
           {blocked ? codes_blocked.data() : nullptr, scales_blocked.data(), bias_blocked.data(),
            detail::unsigned_weight_bias(w.type)}};
    const auto quantize = [&rows](int64_t begin, int64_t end) {
      if (rows.block == 32) {
        quantize_rows_q8_0(rows.x + begin * rows.cols, end - begin, rows.cols,
                           rows.codes + begin * rows.cols, rows.scales + begin * (rows.cols / 32));
        if (rows.blocked.codes != nullptr) {
          block_rows(rows.codes, rows.scales, rows.M, rows.cols, begin, end, rows.blocked);
        }
      } else {
        quantize_rows_q8_k(rows.x + begin * rows.cols, end - begin, rows.cols,
                           rows.codes + begin * rows.cols, rows.scales + begin * (rows.cols / 256),
                           rows.bsums + begin * (rows.cols / 16));
      }
    };
    // Up to 16 K values (about 3 us at 0.2 ns each) are cheaper to quantize here than to hand to
    // the pool; more are split by rows, so that a verify of a few rows of a wide matrix does not
    // leave the other threads waiting on this one.
    if (M * w.cols < 16384) {
      quantize(0, M);
    } else {
      pool.parallel_for(M, quantize);
    }
    if (const auto* observer = detail::activation_observer(); observer && q8_0) {
      (*observer)({x, M, w.cols, codes.data(), scales.data()});
      // The observer may have changed a rounding: the blocked copy follows it.
      if (blocked) block_rows(codes.data(), scales.data(), M, w.cols, 0, M, rows.blocked);
    }
  }
  struct Job {
    const detail::MatmulArgs* args;
    void (*rows)(const detail::MatmulArgs&, int64_t, int64_t);
  };
  const Job job{&args, isa == Isa::kAmx      ? detail::matmul_rows_amx
                       : isa == Isa::kAvx512 ? detail::matmul_rows_avx512
                       : isa == Isa::kAvx2   ? detail::matmul_rows_avx2
                                             : detail::matmul_rows_scalar};
  using Layout = tensor::Matrix::Layout;
  if (w.packed && w.packed_layout == Layout::kScaleGroups && isa == Isa::kAvx2) {
    args.packed = w.packed.get();
  }
  if (w.packed && w.packed_layout == Layout::kLanes16 && isa == Isa::kAvx512) {
    // Threads take whole groups of packed rows.
    args.packed = w.packed.get();
    for_row_chunks(pool, w.rows, w.row_bytes, kPackedRows,
                   [&job](int64_t begin, int64_t end) { job.rows(*job.args, begin, end); });
    return;
  }
  for_row_chunks(pool, w.rows, w.row_bytes, 1,
                 [&job](int64_t begin, int64_t end) { job.rows(*job.args, begin, end); });
}

}  // namespace augur::kernels
