// Rewrites a real GGUF into a variant: for error tests, metadata overridden, added or dropped,
// tensors dropped, re-declared with another shape or type (their bytes truncated to fit); for
// planted defects, tensor bytes edited in place.
#pragma once

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"

namespace augur::testing {

struct GgufEdit {
  std::map<std::string, std::string> string_overrides;  // metadata key -> new string value
  std::map<std::string, gguf::Value> value_overrides;   // key -> new value (added when absent)
  std::vector<std::string> drop_keys;
  std::vector<std::string> drop_tensors;
  std::map<std::string, std::vector<int64_t>> reshape;  // tensor -> new ne (same byte count)
  std::map<std::string, gguf::TensorType> retype;       // tensor -> new type (bytes truncated)
};

inline void rewrite_gguf(const std::filesystem::path& src, const std::filesystem::path& dst,
                         const GgufEdit& edit) {
  const auto in = gguf::File::open(src);
  gguf::Writer out(dst);
  for (const auto& [key, value] : in->metadata()) {
    if (key == "general.alignment") continue;
    if (std::find(edit.drop_keys.begin(), edit.drop_keys.end(), key) != edit.drop_keys.end())
      continue;
    if (auto it = edit.string_overrides.find(key); it != edit.string_overrides.end()) {
      out.set_string(key, it->second);
    } else if (auto v = edit.value_overrides.find(key); v != edit.value_overrides.end()) {
      out.set(key, v->second);
    } else {
      out.set(key, value);
    }
  }
  for (const auto& [key, value] : edit.value_overrides) {
    if (!in->has(key)) out.set(key, value);
  }
  struct Kept {
    const gguf::TensorInfo* info;
    size_t n_bytes;
  };
  std::vector<Kept> kept;
  for (const auto& t : in->tensors()) {
    if (std::find(edit.drop_tensors.begin(), edit.drop_tensors.end(), t.name) !=
        edit.drop_tensors.end())
      continue;
    auto ne = t.ne;
    auto type = t.type;
    if (auto it = edit.reshape.find(t.name); it != edit.reshape.end()) ne = it->second;
    if (auto it = edit.retype.find(t.name); it != edit.retype.end()) type = it->second;
    kept.push_back({&t, out.add_tensor(t.name, type, ne)});
  }
  out.write_header();
  for (const auto& k : kept) {
    out.write_tensor_data(k.info->name, std::span<const uint8_t>(k.info->data, k.n_bytes));
  }
  out.finish();
}

// Copies a GGUF with the bytes of the tensors `edit` accepts (returns true for) rewritten in place
// (same type and size).
inline void rewrite_tensor_bytes(
    const std::filesystem::path& src, const std::filesystem::path& dst,
    const std::function<bool(const gguf::TensorInfo&, std::vector<uint8_t>&)>& edit) {
  const auto in = gguf::File::open(src);
  gguf::Writer out(dst);
  for (const auto& [key, value] : in->metadata()) out.set(key, value);
  for (const auto& t : in->tensors()) out.add_tensor(t.name, t.type, t.ne);
  out.write_header();
  for (const auto& t : in->tensors()) {
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    edit(t, bytes);
    out.write_tensor_data(t.name, std::span<const uint8_t>(bytes));
  }
  out.finish();
}

}  // namespace augur::testing
