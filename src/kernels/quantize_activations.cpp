#include "kernels/quantize_activations.h"

#include <cmath>
#include <utility>

#include "common/error.h"
#include "kernels/isa.h"
#include "tensor/matrix.h"

namespace augur::kernels {

namespace {
ActivationObserver& observer_slot() {
  static ActivationObserver observer;
  return observer;
}
}  // namespace

void set_activation_observer_for_testing(ActivationObserver observer) {
  observer_slot() = std::move(observer);
}

namespace detail {
const ActivationObserver* activation_observer() {
  const ActivationObserver& observer = observer_slot();
  return observer ? &observer : nullptr;
}
}  // namespace detail

bool uses_q8_activations(gguf::TensorType type) {
  return type == gguf::TensorType::Q8_0 || type == gguf::TensorType::Q4_0;
}

namespace detail {
void quantize_rows_q8_0_avx2(const float* x, int64_t rows, int64_t cols, int8_t* qs, float* d);
}  // namespace detail

void quantize_rows_q8_0(const float* x, int64_t rows, int64_t cols, int8_t* qs, float* d) {
  AUGUR_CHECK(cols % 32 == 0, "Q8_0 activation rows are whole blocks of 32");
  if (runs_avx2_kernels(current_isa()))
    return detail::quantize_rows_q8_0_avx2(x, rows, cols, qs, d);
  const int64_t blocks = rows * (cols / 32);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + 32 * b;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(v[i]));
    d[b] = tensor::fp16_to_fp32(tensor::fp32_to_fp16(amax / 127.0f));
    // ggml multiplies by 127 / amax (not 1 / d) and rounds half to even (vroundps, mode 0).
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < 32; ++i) {
      qs[32 * b + i] = static_cast<int8_t>(__builtin_roundevenf(v[i] * id));
    }
  }
}

}  // namespace augur::kernels
