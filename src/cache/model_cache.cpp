#include "cache/model_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "model/model.h"
#include "tensor/matrix.h"

namespace augur::cache {
namespace {

using model::LayerCache;

void check_type(gguf::TensorType type, int64_t head_dim, const char* which) {
  using gguf::TensorType;
  if (type != TensorType::F32 && type != TensorType::F16 && type != TensorType::Q8_0 &&
      type != TensorType::Q4_0) {
    throw InvalidArgument(fmt::format("cache type {} {} is not supported (f32, f16, q8_0, q4_0)",
                                      which, gguf::type_name(type)));
  }
  if (head_dim % gguf::traits(type).block_elems != 0) {
    throw InvalidArgument(
        fmt::format("cache type {} {} needs a head size that is a multiple of {}; "
                    "this model's is {}",
                    which, gguf::type_name(type), gguf::traits(type).block_elems, head_dim));
  }
}

}  // namespace

gguf::TensorType parse_cache_type(std::string_view name) {
  if (name == "f32") return gguf::TensorType::F32;
  if (name == "f16") return gguf::TensorType::F16;
  if (name == "q8_0") return gguf::TensorType::Q8_0;
  if (name == "q4_0") return gguf::TensorType::Q4_0;
  throw InvalidArgument(
      fmt::format("unknown cache type '{}' (supported: f32, f16, q8_0, q4_0)", name));
}

std::string_view cache_type_name(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::F32: return "f32";
    case gguf::TensorType::F16: return "f16";
    case gguf::TensorType::Q8_0: return "q8_0";
    case gguf::TensorType::Q4_0: return "q4_0";
    default: return gguf::type_name(type);
  }
}

ModelCache::ModelCache(const model::Model& model, const CacheOptions& options)
    : ModelCache(model.cache_layout(), model.hparams(), options) {}

ModelCache::ModelCache(std::vector<LayerCache> layout, const model::HParams& hp,
                       const CacheOptions& options)
    : n_heads_(static_cast<int>(hp.n_head_kv)),
      head_dim_(hp.head_dim),
      capacity_(options.capacity),
      max_batch_(std::max<int64_t>(1, options.max_batch)),
      state_slots_(kMaxRollback + 1),
      type_k_(options.type_k),
      type_v_(options.type_v) {
  if (capacity_ <= 0) {
    throw InvalidArgument(fmt::format("context size {} must be positive", capacity_));
  }
  check_type(type_k_, head_dim_, "k");
  check_type(type_v_, head_dim_, "v");
  k_row_bytes_ = gguf::row_bytes(type_k_, head_dim_);
  v_row_bytes_ = gguf::row_bytes(type_v_, head_dim_);
  if (options.n_layers >= 0 && options.n_layers < static_cast<int>(layout.size())) {
    layout.resize(static_cast<size_t>(options.n_layers));
  }
  layers_.resize(layout.size());
  for (size_t i = 0; i < layout.size(); ++i) {
    Layer& l = layers_[i];
    l.spec = layout[i];
    if (l.spec.kind == LayerCache::Kind::kRecurrent) {
      AUGUR_CHECK(l.spec.state_floats > 0, "a recurrent layer carries a state");
      l.state.assign(static_cast<size_t>((1 + state_slots_) * l.spec.state_floats), 0.0f);
      continue;
    }
    // A ring outlives the window by the rows one forward writes before it reads them, or a
    // rollback drops, whichever is more: the rows the window needs are never overwritten.
    l.slots = l.spec.window > 0
                  ? std::min(capacity_, l.spec.window + std::max(max_batch_, kMaxRollback))
                  : capacity_;
    l.k.assign(static_cast<size_t>(n_heads_ * l.slots) * k_row_bytes_, 0);
    l.v.assign(static_cast<size_t>(n_heads_ * l.slots) * v_row_bytes_, 0);
  }
}

LayerCache ModelCache::layer_cache(int layer) const {
  AUGUR_CHECK(layer >= 0 && layer < n_layers(), "a layer the cache holds");
  return layers_[static_cast<size_t>(layer)].spec;
}

model::KvRows ModelCache::layer_kv(int layer) {
  Layer& l = layers_[static_cast<size_t>(layer)];
  return {type_k_,      type_v_,      l.k.data(), l.v.data(),
          k_row_bytes_, v_row_bytes_, l.slots,    l.spec.window};
}

float* ModelCache::layer_state(int layer, int64_t rows) {
  Layer& l = layers_[static_cast<size_t>(layer)];
  AUGUR_CHECK(rows >= committed_ && rows <= committed_ + pending_ + max_batch_,
              "a recurrent state between the committed rows and the batch's last");
  const int64_t slot = rows == committed_ ? 0 : 1 + (rows - committed_ - 1) % state_slots_;
  return l.state.data() + slot * l.spec.state_floats;
}

void ModelCache::advance(int64_t n) {
  AUGUR_CHECK(n >= 0 && n <= max_batch_ && committed_ + pending_ + n <= capacity_,
              "advance within capacity and the batch size");
  pending_ += n;
}

bool ModelCache::limited_rollback() const {
  return std::any_of(layers_.begin(), layers_.end(), [](const Layer& l) {
    return l.spec.kind == LayerCache::Kind::kRecurrent || l.spec.window > 0;
  });
}

void ModelCache::commit(int64_t keep) {
  if (keep < 0 || keep > pending_) {
    throw InvalidArgument(
        fmt::format("cache commit of {} rows, but only {} are pending", keep, pending_));
  }
  if (pending_ - keep > kMaxRollback && limited_rollback()) {
    throw InvalidArgument(fmt::format(
        "cache commit of {} of {} pending rows: a rollback of more than {} rows cannot be undone "
        "on a sliding-window or recurrent layer",
        keep, pending_, kMaxRollback));
  }
  if (keep > 0) {
    for (int layer = 0; layer < n_layers(); ++layer) {
      Layer& l = layers_[static_cast<size_t>(layer)];
      if (l.spec.kind != LayerCache::Kind::kRecurrent) continue;
      const float* after = layer_state(layer, committed_ + keep);
      std::copy_n(after, l.spec.state_floats, l.state.data());
    }
  }
  committed_ += keep;
  pending_ = 0;
}

bool ModelCache::can_truncate(int64_t n) const {
  if (n < 0 || n > committed_) return false;
  if (n == committed_ || n == 0) return true;
  for (const Layer& l : layers_) {
    if (l.spec.kind == LayerCache::Kind::kRecurrent) return false;
    // The rows n's window needs must not have been overwritten by a later row.
    const model::KvRows rows{type_k_, type_v_, nullptr, nullptr, 0, 0, l.slots, l.spec.window};
    if (l.spec.window > 0 && rows.first_visible(n) < n_rows() - l.slots) return false;
  }
  return true;
}

void ModelCache::truncate(int64_t n) {
  if (!can_truncate(n)) {
    throw InvalidArgument(fmt::format(
        "cache truncate to {} rows: it holds {}{}", n, committed_,
        n >= 0 && n <= committed_ ? ", and a recurrent or sliding-window layer cannot go back there"
                                  : ""));
  }
  if (n == 0) {
    for (Layer& l : layers_) std::fill(l.state.begin(), l.state.end(), 0.0f);
  }
  committed_ = n;
  pending_ = 0;
}

int64_t ModelCache::first_held(int layer) const {
  const Layer& l = layers_.at(static_cast<size_t>(layer));
  if (l.spec.kind == LayerCache::Kind::kRecurrent) return n_rows();
  return std::max<int64_t>(0, n_rows() - l.slots);
}

const ModelCache::Layer& ModelCache::held_layer(int layer, int64_t row, int head) const {
  if (layer < 0 || layer >= n_layers() || head < 0 || head >= n_heads_ || row < 0 ||
      row >= n_rows() || row < first_held(layer)) {
    throw InvalidArgument(
        fmt::format("cache read of layer {} head {} row {}: not held", layer, head, row));
  }
  return layers_[static_cast<size_t>(layer)];
}

std::span<const uint8_t> ModelCache::key_bytes(int layer, int head, int64_t row) const {
  const Layer& l = held_layer(layer, row, head);
  return {l.k.data() + (head * l.slots + row % l.slots) * k_row_bytes_, k_row_bytes_};
}

std::span<const uint8_t> ModelCache::value_bytes(int layer, int head, int64_t row) const {
  const Layer& l = held_layer(layer, row, head);
  return {l.v.data() + (head * l.slots + row % l.slots) * v_row_bytes_, v_row_bytes_};
}

std::span<const float> ModelCache::key_row(int layer, int head, int64_t row) const {
  AUGUR_CHECK(type_k_ == gguf::TensorType::F32, "float rows of an F32 cache");
  const auto bytes = key_bytes(layer, head, row);
  return {reinterpret_cast<const float*>(bytes.data()), static_cast<size_t>(head_dim_)};
}

std::span<const float> ModelCache::value_row(int layer, int head, int64_t row) const {
  AUGUR_CHECK(type_v_ == gguf::TensorType::F32, "float rows of an F32 cache");
  const auto bytes = value_bytes(layer, head, row);
  return {reinterpret_cast<const float*>(bytes.data()), static_cast<size_t>(head_dim_)};
}

std::span<const float> ModelCache::state(int layer) const {
  const Layer& l = layers_.at(static_cast<size_t>(layer));
  if (l.spec.kind != LayerCache::Kind::kRecurrent) {
    throw InvalidArgument(fmt::format("cache layer {} holds no recurrent state", layer));
  }
  return {l.state.data(), static_cast<size_t>(l.spec.state_floats)};
}

std::vector<uint8_t> ModelCache::save(int64_t n) const {
  if (n != committed_ && !can_truncate(n)) {
    throw InvalidArgument(fmt::format("cache save of {} rows: it holds {}", n, committed_));
  }
  std::vector<uint8_t> out;
  for (const Layer& l : layers_) {
    if (l.spec.kind == LayerCache::Kind::kRecurrent) {
      const auto* s = reinterpret_cast<const uint8_t*>(l.state.data());
      out.insert(out.end(), s, s + l.spec.state_floats * sizeof(float));
      continue;
    }
    const model::KvRows rows{type_k_, type_v_, nullptr, nullptr, 0, 0, l.slots, l.spec.window};
    const int64_t first = rows.first_visible(n);
    for (int head = 0; head < n_heads_; ++head) {
      for (int64_t row = first; row < n; ++row) {
        const auto* k = l.k.data() + (head * l.slots + row % l.slots) * k_row_bytes_;
        const auto* v = l.v.data() + (head * l.slots + row % l.slots) * v_row_bytes_;
        out.insert(out.end(), k, k + k_row_bytes_);
        out.insert(out.end(), v, v + v_row_bytes_);
      }
    }
  }
  return out;
}

void ModelCache::restore(std::span<const uint8_t> saved, int64_t n) {
  if (n < 0 || n > capacity_) {
    throw InvalidArgument(fmt::format("cache restore of {} rows into a cache of {}", n, capacity_));
  }
  size_t need = 0;
  for (const Layer& l : layers_) {
    if (l.spec.kind == LayerCache::Kind::kRecurrent) {
      need += l.spec.state_floats * sizeof(float);
    } else {
      const model::KvRows rows{type_k_, type_v_, nullptr, nullptr, 0, 0, l.slots, l.spec.window};
      need += static_cast<size_t>(n_heads_ * (n - rows.first_visible(n))) *
              (k_row_bytes_ + v_row_bytes_);
    }
  }
  if (saved.size() != need) {
    throw InvalidArgument(fmt::format("cache restore of {} rows: {} bytes saved, {} expected", n,
                                      saved.size(), need));
  }
  const uint8_t* src = saved.data();
  for (Layer& l : layers_) {
    if (l.spec.kind == LayerCache::Kind::kRecurrent) {
      std::memcpy(l.state.data(), src, l.spec.state_floats * sizeof(float));
      src += l.spec.state_floats * sizeof(float);
      continue;
    }
    const model::KvRows rows{type_k_, type_v_, nullptr, nullptr, 0, 0, l.slots, l.spec.window};
    for (int head = 0; head < n_heads_; ++head) {
      for (int64_t row = rows.first_visible(n); row < n; ++row) {
        std::memcpy(l.k.data() + (head * l.slots + row % l.slots) * k_row_bytes_, src,
                    k_row_bytes_);
        src += k_row_bytes_;
        std::memcpy(l.v.data() + (head * l.slots + row % l.slots) * v_row_bytes_, src,
                    v_row_bytes_);
        src += v_row_bytes_;
      }
    }
  }
  committed_ = n;
  pending_ = 0;
}

int64_t ModelCache::kv_bytes() const {
  int64_t n = 0;
  for (const Layer& l : layers_) n += static_cast<int64_t>(l.k.capacity() + l.v.capacity());
  return n;
}

int64_t ModelCache::state_bytes() const {
  int64_t n = 0;
  for (const Layer& l : layers_) n += static_cast<int64_t>(l.state.capacity() * sizeof(float));
  return n;
}

int64_t ModelCache::slots(int layer) const {
  return layers_.at(static_cast<size_t>(layer)).slots;
}

int64_t ModelCache::layer_bytes(int layer) const {
  const Layer& l = layers_.at(static_cast<size_t>(layer));
  return static_cast<int64_t>(l.k.capacity() + l.v.capacity() + l.state.capacity() * sizeof(float));
}

int64_t ModelCache::bytes() const {
  return kv_bytes() + state_bytes();
}

}  // namespace augur::cache
