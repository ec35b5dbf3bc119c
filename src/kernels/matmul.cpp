#include "kernels/matmul.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "kernels/matmul_kernels.h"

namespace augur::kernels {

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

  const detail::MatmulArgs args{w.type, w.data, w.row_bytes, w.rows, w.cols, x, M, y};
  struct Job {
    const detail::MatmulArgs* args;
    void (*rows)(const detail::MatmulArgs&, int64_t, int64_t);
  };
  const Job job{
      &args, current_isa() == Isa::kAvx2 ? detail::matmul_rows_avx2 : detail::matmul_rows_scalar};
  // Captures one pointer, so std::function keeps it inline: no allocation per call.
  const Job* job_ptr = &job;
  pool.parallel_for(
      w.rows, [job_ptr](int64_t begin, int64_t end) { job_ptr->rows(*job_ptr->args, begin, end); });
}

}  // namespace augur::kernels
