// The cache of one model session: every layer keeps its past the way the model declares
// (model::LayerCache) — all K/V rows, a sliding-window ring of K/V rows, or a recurrent state —
// and one transaction drives them all: a forward appends pending rows; commit(keep) keeps the
// first `keep` of them, which for a ring means only advancing the row count (the ring has room
// for the rows a rollback drops, so the rows the window still needs are never overwritten), and
// for a recurrent layer installing the state computed after row `keep` (kept for every pending
// row a rollback may return to). K/V rows are stored as the cache types (F32, F16, Q8_0, Q4_0,
// as llama.cpp's --cache-type-k/-v), quantized when written, so dropping a row is exact.
// Layout per attention layer and kv head: [slots, row bytes], rows in order of slot.
#pragma once

#include <span>
#include <vector>

#include "cache/cache.h"
#include "gguf/types.h"
#include "model/hparams.h"
#include "model/memory.h"

namespace augur::model {
class Model;
}

namespace augur::cache {

// Most pending rows one commit may drop: a verify of the longest draft (engine::kMaxDraft) plus
// its carry row, or a rolled-back calibration forward of as many.
inline constexpr int64_t kMaxRollback = 33;

struct CacheOptions {
  int64_t capacity = 0;    // rows (the context size)
  int64_t max_batch = 64;  // most rows one forward adds (the evaluator's ubatch)
  int n_layers = -1;       // the first n layers only (a layer-skip drafter); -1 = all
  gguf::TensorType type_k = gguf::TensorType::F32;
  gguf::TensorType type_v = gguf::TensorType::F32;
};

// "f32", "f16", "q8_0", "q4_0" (llama.cpp's names); InvalidArgument names the others.
gguf::TensorType parse_cache_type(std::string_view name);
// The name parse_cache_type reads for `type`.
std::string_view cache_type_name(gguf::TensorType type);

// The K and V row types of a session's caches (--cache-type-k / --cache-type-v); a drafter's
// cache uses its target's.
struct CacheTypes {
  gguf::TensorType k = gguf::TensorType::F32;
  gguf::TensorType v = gguf::TensorType::F32;
};

class ModelCache final : public Cache, private model::Memory {
 public:
  // The layers `model` declares (Model::cache_layout).
  ModelCache(const model::Model& model, const CacheOptions& options);
  // Layers as given (tests, models without a Model object).
  ModelCache(std::vector<model::LayerCache> layout, const model::HParams& hp,
             const CacheOptions& options);

  int64_t size() const override { return committed_; }
  int64_t pending() const override { return pending_; }
  // InvalidArgument if keep > pending(), or when it would drop more than kMaxRollback rows of a
  // cache with a ring or a recurrent layer (the state it would need is gone).
  void commit(int64_t keep) override;
  // Full K/V layers can go back to any row; a ring only as far as it still holds the rows the
  // window needs; a recurrent state only to 0 (cleared) or to where it is. can_truncate says
  // which; InvalidArgument otherwise.
  void truncate(int64_t n) override;
  bool can_truncate(int64_t n) const;
  model::Memory& memory() override { return *this; }
  int64_t capacity() const override { return capacity_; }
  int64_t max_batch() const override { return max_batch_; }

  int n_layers() const override { return static_cast<int>(layers_.size()); }
  int n_heads() const override { return n_heads_; }
  model::LayerCache layer_cache(int layer) const override;
  gguf::TensorType type_k() const { return type_k_; }
  gguf::TensorType type_v() const { return type_v_; }

  // Read-back for tests. The first row whose K/V a layer still holds (0 unless a ring).
  int64_t first_held(int layer) const;
  // The stored bytes of (layer, kv head, row); InvalidArgument for a row not held.
  std::span<const uint8_t> key_bytes(int layer, int head, int64_t row) const;
  std::span<const uint8_t> value_bytes(int layer, int head, int64_t row) const;
  // The same decoded as floats (F32 caches only). [head_dim]
  std::span<const float> key_row(int layer, int head, int64_t row) const;
  std::span<const float> value_row(int layer, int head, int64_t row) const;
  // A recurrent layer's committed state. [state_floats]
  std::span<const float> state(int layer) const;

  // What the first n committed rows leave for later rows — every K/V row a later row can see and
  // each recurrent state — to be restored into a cache of the same shape. InvalidArgument unless
  // can_truncate(n) or n == size().
  std::vector<uint8_t> save(int64_t n) const;
  void restore(std::span<const uint8_t> saved, int64_t n);

  // Resident bytes of every layer's K/V rows and states (what it allocated).
  int64_t bytes() const;
  // Bytes of K/V rows and recurrent states, separately (memory reports).
  int64_t kv_bytes() const;
  int64_t state_bytes() const;
  // Per layer (memory reports): the K/V rows it has room for (0 for a recurrent layer), and its
  // resident bytes.
  int64_t slots(int layer) const;
  int64_t layer_bytes(int layer) const;
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }

 private:
  struct Layer {
    model::LayerCache spec;
    int64_t slots = 0;          // attention: K/V rows it holds room for
    std::vector<uint8_t> k, v;  // attention: [n_heads, slots, row bytes]
    std::vector<float> state;   // recurrent: [1 + pending slots, state_floats]; 0 = committed
  };

  int64_t n_rows() const override { return committed_ + pending_; }
  model::KvRows layer_kv(int layer) override;
  float* layer_state(int layer, int64_t rows) override;
  void advance(int64_t n) override;
  const Layer& held_layer(int layer, int64_t row, int head) const;
  bool limited_rollback() const;

  std::vector<Layer> layers_;
  int n_heads_;
  int64_t head_dim_;
  int64_t capacity_;
  int64_t max_batch_;
  int64_t state_slots_;  // pending states kept per recurrent layer
  gguf::TensorType type_k_, type_v_;
  size_t k_row_bytes_, v_row_bytes_;
  int64_t committed_ = 0;
  int64_t pending_ = 0;
};

}  // namespace augur::cache
