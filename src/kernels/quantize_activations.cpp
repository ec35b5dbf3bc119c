#include "kernels/quantize_activations.h"

#include <cmath>
#include <cstring>
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
  return type == gguf::TensorType::Q8_0 || type == gguf::TensorType::Q4_0 ||
         type == gguf::TensorType::Q5_0;
}

bool uses_q8_k_activations(gguf::TensorType type) {
  return type == gguf::TensorType::Q4_K || type == gguf::TensorType::Q5_K ||
         type == gguf::TensorType::Q6_K;
}

namespace {

// ggml's nearest_int: adding 1.5 * 2^23 leaves round-half-even(v) in the low mantissa bits
// (|v| < 2^22). The product is kept rounded on its own (no FMA contraction into the addition).
int nearest_int(float v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+x"(v));
#endif
  const float shifted = v + 12582912.0f;
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

}  // namespace

void quantize_rows_q8_k(const float* x, int64_t rows, int64_t cols, int8_t* qs, float* d,
                        int16_t* bsums) {
  AUGUR_CHECK(cols % 256 == 0, "Q8_K activation rows are whole super-blocks of 256");
  const int64_t blocks = rows * (cols / 256);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + 256 * b;
    int8_t* q = qs + 256 * b;
    int16_t* sums = bsums + 16 * b;
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < 256; ++i) {
      const float a = std::fabs(v[i]);
      if (a > amax) {
        amax = a;
        max = v[i];
      }
    }
    if (amax == 0.0f) {
      d[b] = 0.0f;
      std::memset(q, 0, 256);
      std::memset(sums, 0, 16 * sizeof(int16_t));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int i = 0; i < 256; ++i) {
      const int code = nearest_int(iscale * v[i]);
      q[i] = static_cast<int8_t>(code < 127 ? code : 127);
    }
    for (int k = 0; k < 16; ++k) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += q[16 * k + i];
      sums[k] = static_cast<int16_t>(sum);
    }
    d[b] = 1.0f / iscale;
  }
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
    // ggml multiplies by 127 / amax (not 1 / d) and rounds half to even (vroundps, mode 0):
    // nearbyint in the default rounding mode, which nothing here changes.
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < 32; ++i) {
      // |v * id| <= 127 except for NaN (a NaN or infinite activation): cvtps2dq + packs turn
      // that into -128, and so does this (casting NaN is undefined behaviour).
      const float r = std::nearbyint(v[i] * id);
      qs[32 * b + i] = r == r ? static_cast<int8_t>(r) : int8_t{-128};
    }
  }
}

}  // namespace augur::kernels
