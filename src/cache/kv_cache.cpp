#include "cache/kv_cache.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace augur::cache {

KvCache::KvCache(const model::HParams& hp, int64_t capacity, int n_layers)
    : n_layers_(n_layers < 0 ? static_cast<int>(hp.n_layer) : n_layers),
      n_heads_(static_cast<int>(hp.n_head_kv)),
      head_dim_(hp.head_dim),
      capacity_(capacity) {
  if (capacity <= 0)
    throw InvalidArgument(fmt::format("context size {} must be positive", capacity));
  data_.assign(static_cast<size_t>(n_layers_) * 2 * n_heads_ * capacity_ * head_dim_, 0.0f);
}

size_t KvCache::offset(int layer, int kind, int head) const {
  return ((static_cast<size_t>(layer) * 2 + kind) * n_heads_ + head) * capacity_ * head_dim_;
}

float* KvCache::layer_keys(int layer, int head) {
  return data_.data() + offset(layer, 0, head);
}
float* KvCache::layer_values(int layer, int head) {
  return data_.data() + offset(layer, 1, head);
}

void KvCache::advance(int64_t n) {
  AUGUR_CHECK(n >= 0 && committed_ + pending_ + n <= capacity_, "advance within capacity");
  pending_ += n;
}

void KvCache::commit(int64_t keep) {
  if (keep < 0 || keep > pending_) {
    throw InvalidArgument(
        fmt::format("cache commit of {} rows, but only {} are pending", keep, pending_));
  }
  committed_ += keep;
  pending_ = 0;
}

void KvCache::truncate(int64_t n) {
  if (n < 0 || n > committed_) {
    throw InvalidArgument(fmt::format("cache truncate to {} rows, but it holds {}", n, committed_));
  }
  committed_ = n;
  pending_ = 0;
}

std::vector<float> KvCache::save_rows(int64_t n) const {
  if (n < 0 || n > committed_) {
    throw InvalidArgument(fmt::format("cache save of {} rows, but it holds {}", n, committed_));
  }
  const auto run = static_cast<size_t>(n * head_dim_);
  std::vector<float> out(static_cast<size_t>(n_layers_) * 2 * n_heads_ * run);
  float* dst = out.data();
  for (int layer = 0; layer < n_layers_; ++layer) {
    for (int kind = 0; kind < 2; ++kind) {
      for (int head = 0; head < n_heads_; ++head, dst += run) {
        std::copy_n(data_.data() + offset(layer, kind, head), run, dst);
      }
    }
  }
  return out;
}

void KvCache::restore_rows(std::span<const float> rows, int64_t n) {
  const auto run = static_cast<size_t>(n * head_dim_);
  if (n < 0 || n > capacity_ ||
      rows.size() != static_cast<size_t>(n_layers_) * 2 * n_heads_ * run) {
    throw InvalidArgument(fmt::format(
        "cache restore of {} rows ({} floats) into a cache of {} rows", n, rows.size(), capacity_));
  }
  const float* src = rows.data();
  for (int layer = 0; layer < n_layers_; ++layer) {
    for (int kind = 0; kind < 2; ++kind) {
      for (int head = 0; head < n_heads_; ++head, src += run) {
        std::copy_n(src, run, data_.data() + offset(layer, kind, head));
      }
    }
  }
  committed_ = n;
  pending_ = 0;
}

void KvCache::check_row(int layer, int head, int64_t row) const {
  if (layer < 0 || layer >= n_layers_ || head < 0 || head >= n_heads_ || row < 0 ||
      row >= committed_ + pending_) {
    throw InvalidArgument(fmt::format("cache read of layer {} head {} row {} outside {}x{}x{}",
                                      layer, head, row, n_layers_, n_heads_,
                                      committed_ + pending_));
  }
}

std::span<const float> KvCache::key_row(int layer, int head, int64_t row) const {
  check_row(layer, head, row);
  return {data_.data() + offset(layer, 0, head) + row * head_dim_, static_cast<size_t>(head_dim_)};
}

std::span<const float> KvCache::value_row(int layer, int head, int64_t row) const {
  check_row(layer, head, row);
  return {data_.data() + offset(layer, 1, head) + row * head_dim_, static_cast<size_t>(head_dim_)};
}

}  // namespace augur::cache
