#include "model/blocks/ops.h"

#include <cmath>
#include <vector>

#include "tensor/matrix.h"

namespace augur::model::blocks {

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void rope_angles(int32_t position, int64_t n_rot, float base, float* cos_sin) {
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(position);
  for (int64_t pair = 0; pair < n_rot / 2; ++pair) {
    cos_sin[2 * pair] = std::cos(theta);
    cos_sin[2 * pair + 1] = std::sin(theta);
    theta *= theta_scale;
  }
}

void apply_rope(float* heads, int64_t n_heads, int64_t head_dim, int64_t n_rot, RopeType type,
                const float* cos_sin) {
  const int64_t half = n_rot / 2;
  for (int64_t head = 0; head < n_heads; ++head) {
    float* v = heads + head * head_dim;
    for (int64_t pair = 0; pair < half; ++pair) {
      const int64_t i0 = type == RopeType::Norm ? 2 * pair : pair;
      const int64_t i1 = type == RopeType::Norm ? 2 * pair + 1 : pair + half;
      const float c = cos_sin[2 * pair], s = cos_sin[2 * pair + 1];
      const float a = v[i0], b = v[i1];
      v[i0] = a * c - b * s;
      v[i1] = a * s + b * c;
    }
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

namespace {

// fp16(gelu_tanh(x)) for every FP16 bit pattern x, as ggml_table_gelu_f16 (ggml's gelu formula
// in float, 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)))).
const std::vector<uint16_t>& gelu_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(1 << 16);
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCoefA = 0.044715f;
    for (size_t i = 0; i < t.size(); ++i) {
      const float x = tensor::fp16_to_fp32(static_cast<uint16_t>(i));
      const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
      t[i] = tensor::fp32_to_fp16(g);
    }
    return t;
  }();
  return table;
}

}  // namespace

void gelu_mul(float* gate, const float* up, int64_t n) {
  const auto& table = gelu_table();
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    float g;
    if (x <= -10.0f) {
      g = 0.0f;
    } else if (x >= 10.0f) {
      g = x;
    } else {
      g = tensor::fp16_to_fp32(table[tensor::fp32_to_fp16(x)]);
    }
    gate[i] = g * up[i];
  }
}

void softcap(float* x, int64_t n, float c) {
  for (int64_t i = 0; i < n; ++i) x[i] = c * std::tanh(x[i] / c);
}

}  // namespace augur::model::blocks
