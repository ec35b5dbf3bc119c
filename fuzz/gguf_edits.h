// The edit scripts of the model-loading fuzz targets (model_load, drafter_load): an input's bytes
// decide a few edits of a real GGUF (hyperparameters set to other integers or floats or dropped,
// the architecture renamed, an hparam the file may lack added, tensors reshaped, retyped or
// dropped), and the edited file is written with gguf::Writer, so every input reaches the loader
// as a well-formed file describing a possibly impossible model.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/types.h"
#include "gguf/writer.h"

namespace augur::fuzz {

// What a target's edits pick from: names for general.architecture, and hparam key suffixes
// (after "<arch>") to set or add.
struct EditVocabulary {
  std::span<const std::string_view> arch_names;
  std::span<const std::string_view> hparam_suffixes;
};

inline constexpr std::array kEditTypes = {
    gguf::TensorType::F32,  gguf::TensorType::F16,    gguf::TensorType::BF16,
    gguf::TensorType::Q8_0, gguf::TensorType::Q4_0,   gguf::TensorType::Q5_0,
    gguf::TensorType::Q4_K, gguf::TensorType::Q5_K,   gguf::TensorType::Q6_K,
    gguf::TensorType::I32,  gguf::TensorType::IQ2_XXS};

inline int64_t pick_int(FuzzedDataProvider& in, int64_t original) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return original + in.ConsumeIntegralInRange<int64_t>(-3, 3);
    case 3: return original * 2;
    case 4: return original / 2;
    case 5: return std::numeric_limits<int32_t>::max();
    case 6: return int64_t{1} << in.ConsumeIntegralInRange(8, 62);
    default: return in.ConsumeIntegral<int64_t>();
  }
}

inline double pick_float(FuzzedDataProvider& in, double original) {
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0: return 0.0;
    case 1: return -original;
    case 2: return std::numeric_limits<double>::quiet_NaN();
    case 3: return std::numeric_limits<double>::infinity();
    case 4: return original * in.ConsumeFloatingPointInRange(-4.0, 4.0);
    default: return in.ConsumeFloatingPoint<double>();
  }
}

// An integer value of the kind `original` has (or a random integer kind).
inline gguf::Value int_value(FuzzedDataProvider& in, const gguf::Value* original) {
  int64_t base = 8;
  if (original && original->is_integer()) {
    // A UINT64 above INT64_MAX (an earlier edit) has no int64 value: as_int would throw.
    const auto* u = std::get_if<uint64_t>(&original->data);
    base = u ? static_cast<int64_t>(*u) : original->as_int("");
  }
  const int64_t v = pick_int(in, base);
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: return {gguf::ValueType::UINT32, static_cast<uint64_t>(static_cast<uint32_t>(v))};
    case 1: return {gguf::ValueType::INT32, static_cast<int64_t>(static_cast<int32_t>(v))};
    case 2: return {gguf::ValueType::UINT64, static_cast<uint64_t>(v)};
    default: return {gguf::ValueType::INT64, v};
  }
}

struct TensorPlan {
  const gguf::TensorInfo* info;
  gguf::TensorType type;
  std::vector<int64_t> ne;
  bool dropped = false;
};

// Builds the edited file at out_path; false when the edits make no valid GGUF (the
// writer's own checks), which is not what this target tests.
inline bool write_edited(FuzzedDataProvider& in, const gguf::File& base,
                         const EditVocabulary& vocab, const std::filesystem::path& out_path) {
  std::vector<std::pair<std::string, gguf::Value>> kv(base.metadata().begin(),
                                                      base.metadata().end());
  std::vector<TensorPlan> tensors;
  for (const auto& t : base.tensors()) tensors.push_back({&t, t.type, t.ne});
  const std::string arch(base.get_string("general.architecture"));

  const int n_edits = in.ConsumeIntegralInRange(1, 4);
  for (int e = 0; e < n_edits && in.remaining_bytes() > 0; ++e) {
    const int kind = in.ConsumeIntegralInRange(0, 7);
    if (kind <= 3) {  // a metadata value
      const size_t k = in.ConsumeIntegralInRange<size_t>(0, kv.size() - 1);
      auto& [key, value] = kv[k];
      if (kind == 0 && value.is_integer()) value = int_value(in, &value);
      if (kind == 1 &&
          (value.type == gguf::ValueType::FLOAT32 || value.type == gguf::ValueType::FLOAT64))
        value = {gguf::ValueType::FLOAT32, pick_float(in, value.as_float(key))};
      if (kind == 2 && key != "general.alignment") kv.erase(kv.begin() + static_cast<long>(k));
      if (kind == 3 && value.type == gguf::ValueType::ARRAY) {
        gguf::Array array{gguf::ValueType::INT32, {}};
        const int n = in.ConsumeIntegralInRange(0, 8);
        for (int i = 0; i < n; ++i) array.items.push_back(int_value(in, nullptr));
        array.element_type = array.items.empty() ? gguf::ValueType::INT32 : array.items[0].type;
        for (auto& item : array.items) item.type = array.element_type;
        value = {gguf::ValueType::ARRAY, std::move(array)};
      }
    } else if (kind == 4) {  // an hparam key the base may lack, or the architecture renamed
      if (in.ConsumeBool()) {
        const std::string_view name =
            vocab.arch_names[in.ConsumeIntegralInRange<size_t>(0, vocab.arch_names.size() - 1)];
        for (auto& [key, value] : kv)
          if (key == "general.architecture")
            value = {gguf::ValueType::STRING, std::string_view(name)};
      } else {
        const std::string key =
            arch + std::string(vocab.hparam_suffixes[in.ConsumeIntegralInRange<size_t>(
                       0, vocab.hparam_suffixes.size() - 1)]);
        bool found = false;
        for (auto& [k, value] : kv)
          if (k == key) value = int_value(in, &value), found = true;
        if (!found) kv.emplace_back(key, int_value(in, nullptr));
      }
    } else if (!tensors.empty()) {  // a tensor
      auto& t = tensors[in.ConsumeIntegralInRange<size_t>(0, tensors.size() - 1)];
      if (kind == 5) {
        t.type = kEditTypes[in.ConsumeIntegralInRange<size_t>(0, kEditTypes.size() - 1)];
        const int64_t block = gguf::traits(t.type).block_elems;
        t.ne[0] = std::max<int64_t>(block, t.ne[0] / block * block);
      } else if (kind == 6) {
        const size_t d = in.ConsumeIntegralInRange<size_t>(0, t.ne.size());
        if (d == t.ne.size() && t.ne.size() < 4) {
          t.ne.push_back(in.ConsumeIntegralInRange<int64_t>(1, 3));
        } else if (d < t.ne.size()) {
          const int64_t block = gguf::traits(t.type).block_elems;
          int64_t v = std::clamp<int64_t>(pick_int(in, t.ne[d]), 1, int64_t{1} << 20);
          if (d == 0) v = std::max<int64_t>(block, v / block * block);
          t.ne[d] = v;
          if (in.ConsumeBool() && t.ne.size() > 1) t.ne.pop_back();
        }
      } else {
        t.dropped = true;
      }
    }
  }

  // No edited tensor may be large: hostile shapes are about checks, not about filling RAM here.
  // (16 MB: at 64 MB, writing and zero-filling one such tensor took a second under ASan, half the
  // CI's timeout per input, seen in the model_load long run.)
  for (auto& t : tensors) {
    if (t.dropped) continue;
    if (gguf::row_bytes(t.type, t.ne[0]) *
            static_cast<size_t>(std::max<int64_t>(1, t.ne.size() > 1 ? t.ne[1] : 1)) *
            static_cast<size_t>(t.ne.size() > 2 ? t.ne[2] : 1) *
            static_cast<size_t>(t.ne.size() > 3 ? t.ne[3] : 1) >
        (size_t{16} << 20))
      return false;
  }

  try {
    gguf::Writer out(out_path);
    for (const auto& [key, value] : kv) {
      if (key == "general.alignment") continue;
      out.set(key, value);
    }
    std::vector<std::pair<const TensorPlan*, size_t>> kept;
    for (const auto& t : tensors)
      if (!t.dropped) kept.emplace_back(&t, out.add_tensor(t.info->name, t.type, t.ne));
    out.write_header();
    std::vector<uint8_t> bytes;
    for (const auto& [t, n] : kept) {
      bytes.assign(n, 0);
      std::copy_n(t->info->data, std::min(n, t->info->n_bytes), bytes.begin());
      out.write_tensor_data(t->info->name, std::span<const uint8_t>(bytes));
    }
    out.finish();
  } catch (const InvalidArgument&) {
    return false;
  }
  return true;
}

}  // namespace augur::fuzz
