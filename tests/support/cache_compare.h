// Whether two memories hold the same past, read through model::Memory (so a test-side cache with
// a planted defect is read the same way as the real one): for rows [0, n), every K/V row an
// attention layer lets a later row see (all of them, or a sliding window's last rows) byte for
// byte, and every recurrent layer's state after row n, bit for bit.
#pragma once

#include <cstring>
#include <string>

#include "model/memory.h"

namespace augur::testing {

// Empty when equal; else names the first difference. Both memories must hold n rows.
inline std::string first_cache_difference(model::Memory& got, model::Memory& want, int64_t n) {
  if (got.n_layers() != want.n_layers()) return "layer counts differ";
  if (got.n_rows() < n || want.n_rows() < n) return "fewer than n rows held";
  for (int layer = 0; layer < got.n_layers(); ++layer) {
    const model::LayerCache spec = got.layer_cache(layer);
    if (!(spec == want.layer_cache(layer))) {
      return "layer " + std::to_string(layer) + ": kinds differ";
    }
    const std::string where = "layer " + std::to_string(layer);
    if (spec.kind == model::LayerCache::Kind::kRecurrent) {
      if (std::memcmp(got.state(layer, n), want.state(layer, n),
                      sizeof(float) * static_cast<size_t>(spec.state_floats)) != 0) {
        return where + ": recurrent state after row " + std::to_string(n);
      }
      continue;
    }
    const model::KvRows a = got.kv(layer), b = want.kv(layer);
    if (a.k_row_bytes != b.k_row_bytes || a.v_row_bytes != b.v_row_bytes) {
      return where + ": row sizes differ";
    }
    for (int head = 0; head < got.n_heads(); ++head) {
      for (int64_t row = a.first_visible(n); row < n; ++row) {
        const std::string at =
            where + " head " + std::to_string(head) + " row " + std::to_string(row);
        if (std::memcmp(a.key(head, row), b.key(head, row), a.k_row_bytes) != 0) {
          return at + ": key";
        }
        if (std::memcmp(a.value(head, row), b.value(head, row), a.v_row_bytes) != 0) {
          return at + ": value";
        }
      }
    }
  }
  return "";
}

}  // namespace augur::testing
