#include "kernels/matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "kernels/quantize_activations.h"

namespace augur::kernels {

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
  const Isa isa = current_isa();
  const bool q8_0 = uses_q8_activations(w.type), q8_k = uses_q8_k_activations(w.type);
  if (q8_0 || q8_k) {
    const int64_t block = q8_0 ? 32 : 256;
    codes.resize(static_cast<size_t>(M * w.cols));
    scales.resize(static_cast<size_t>(M * w.cols / block));
    if (q8_k) bsums.resize(static_cast<size_t>(M * w.cols / 16));
    args.xq = codes.data();
    args.xd = scales.data();
    args.xbsums = q8_k ? bsums.data() : nullptr;
    const struct {
      const float* x;
      int8_t* codes;
      float* scales;
      int16_t* bsums;
      int64_t cols, block;
    } rows{x, codes.data(), scales.data(), args.xbsums ? bsums.data() : nullptr, w.cols, block};
    const auto quantize = [&rows](int64_t begin, int64_t end) {
      if (rows.block == 32) {
        quantize_rows_q8_0(rows.x + begin * rows.cols, end - begin, rows.cols,
                           rows.codes + begin * rows.cols, rows.scales + begin * (rows.cols / 32));
      } else {
        quantize_rows_q8_k(rows.x + begin * rows.cols, end - begin, rows.cols,
                           rows.codes + begin * rows.cols, rows.scales + begin * (rows.cols / 256),
                           rows.bsums + begin * (rows.cols / 16));
      }
    };
    // A few rows are cheaper to quantize here than to hand to the pool.
    if (M < 16) {
      quantize(0, M);
    } else {
      pool.parallel_for(M, quantize);
    }
    if (const auto* observer = detail::activation_observer(); observer && q8_0) {
      (*observer)({x, M, w.cols, codes.data(), scales.data()});
    }
  }
  // The avx512 path reads Q8_0 activations block-major with their code sums (matmul_kernels.h).
  thread_local std::vector<int8_t> codes_blocked;
  thread_local std::vector<float> scales_blocked;
  thread_local std::vector<int32_t> sums_blocked;
  if ((w.type == gguf::TensorType::Q8_0 || w.type == gguf::TensorType::Q4_0) &&
      isa == Isa::kAvx512) {
    const int64_t blocks = w.cols / 32;
    const auto size = static_cast<size_t>(detail::blocked_size(M, blocks));
    codes_blocked.resize(32 * size);
    scales_blocked.resize(size);
    sums_blocked.resize(size);
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t s = 0; s < blocks; ++s) {
        const int8_t* from = codes.data() + m * w.cols + 32 * s;
        const auto to = static_cast<size_t>(detail::blocked_index(M, blocks, m, s));
        std::copy(from, from + 32, codes_blocked.data() + 32 * to);
        scales_blocked[to] = scales[static_cast<size_t>(m * blocks + s)];
        int32_t sum = 0;
        for (int i = 0; i < 32; ++i) sum += from[i];
        sums_blocked[to] = sum;
      }
    }
    args.xq_blocked = codes_blocked.data();
    args.xd_blocked = scales_blocked.data();
    args.xsum_blocked = sums_blocked.data();
  }
  struct Job {
    const detail::MatmulArgs* args;
    void (*rows)(const detail::MatmulArgs&, int64_t, int64_t);
  };
  const Job job{&args, isa == Isa::kAmx      ? detail::matmul_rows_amx
                       : isa == Isa::kAvx512 ? detail::matmul_rows_avx512
                       : isa == Isa::kAvx2   ? detail::matmul_rows_avx2
                                             : detail::matmul_rows_scalar};
  // Captures one pointer, so std::function keeps it inline: no allocation per call.
  const Job* job_ptr = &job;
  if (w.packed && isa == Isa::kAvx512 &&
      (w.type == gguf::TensorType::Q8_0 || w.type == gguf::TensorType::Q4_0)) {
    // Threads take whole groups of packed rows.
    args.packed = w.packed.get();
    pool.parallel_for((w.rows + kPackedRows - 1) / kPackedRows,
                      [job_ptr](int64_t begin, int64_t end) {
                        const int64_t rows = job_ptr->args->rows;
                        job_ptr->rows(*job_ptr->args, begin * kPackedRows,
                                      end * kPackedRows < rows ? end * kPackedRows : rows);
                      });
    return;
  }
  pool.parallel_for(
      w.rows, [job_ptr](int64_t begin, int64_t end) { job_ptr->rows(*job_ptr->args, begin, end); });
}

}  // namespace augur::kernels
