// Shared helpers for the gguf tests: a per-test temporary directory, a raw little-endian byte
// builder for hand-made (often invalid) files, an independent layout walker that lists every
// field of a valid GGUF file (the oracle for "at byte N" in truncation tests), and exact Value
// comparison.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <variant>
#include <vector>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace augur::gguf::test {

// A fresh directory under the system temp dir, named after the running test; removed with
// everything in it when the object goes away.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? fmt::format("{}.{}", info->test_suite_name(), info->name()) : "gguf";
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("augur-{}-{}-{}", name, ::getpid(), counter++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path file(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(std::filesystem::file_size(path), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(in.good()) << path;
  return bytes;
}

inline void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Little-endian byte builder; each append returns the offset it wrote at.
struct Bytes {
  std::string data;

  size_t size() const { return data.size(); }
  template <typename T>
  size_t put(T value) {
    const size_t at = data.size();
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    data.append(raw, sizeof(T));
    return at;
  }
  size_t u8(uint8_t v) { return put(v); }
  size_t u32(uint32_t v) { return put(v); }
  size_t u64(uint64_t v) { return put(v); }
  size_t f32(float v) { return put(v); }
  size_t str(std::string_view s) {
    const size_t at = u64(s.size());
    data.append(s);
    return at;
  }
  // Header: magic, version, tensor count, kv count.
  void header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    data.append("GGUF");
    u32(version);
    u64(n_tensors);
    u64(n_kv);
  }
  // A key with its type tag; returns the offset of the key. The value follows.
  size_t key(std::string_view name, ValueType type) {
    const size_t at = str(name);
    u32(static_cast<uint32_t>(type));
    return at;
  }
  // A tensor info; returns the offset of its name.
  size_t tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    const size_t at = str(name);
    u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    u32(type);
    u64(offset);
    return at;
  }
  void pad_to(size_t alignment) {
    while (data.size() % alignment != 0) data.push_back('\0');
  }
  void fill(size_t n, char c = '\x5a') { data.append(n, c); }
  template <typename T>
  void patch(size_t at, T value) {
    std::memcpy(data.data() + at, &value, sizeof(T));
  }
};

// Where every field of a valid GGUF file lies, found by a walker that shares no code with
// File. Truncating the file at k bytes must make File report the first unit that ends past k
// (or, with "cannot fit", the count field of a container that ends past k).
struct FieldSpan {
  size_t start = 0;
  size_t end = 0;  // one past the last byte
};
struct Layout {
  std::vector<FieldSpan> units;   // header fields in file order: scalars, whole strings, ...
  std::vector<FieldSpan> counts;  // {count field start, end of the region it counts}
  std::vector<std::vector<size_t>> array_items;  // per array: each item's start, then its end
  std::vector<size_t> tensor_offset_field;       // per tensor, in info order
  std::vector<FieldSpan> tensor_data;            // per tensor, absolute file range
  size_t header_end = 0;
  size_t data_offset = 0;
  uint64_t alignment = 32;
};

class LayoutWalker {
 public:
  explicit LayoutWalker(std::string_view bytes) : bytes_(bytes) {}

  Layout walk() {
    Layout out;
    layout_ = &out;
    unit(4);  // magic
    unit(4);  // version
    const auto n_tensors = scalar<uint64_t>();
    const auto n_kv = scalar<uint64_t>();
    const size_t tensors_count = out.counts.size();
    out.counts.push_back({8, 0});
    out.counts.push_back({16, 0});
    for (uint64_t kv = 0; kv < n_kv; ++kv) {
      const std::string_view key = string();
      const auto type = scalar<uint32_t>();
      if (key == "general.alignment") {
        EXPECT_EQ(type, static_cast<uint32_t>(ValueType::UINT32));
        out.alignment = peek<uint32_t>();
      }
      value(type);
    }
    for (uint64_t t = 0; t < n_tensors; ++t) {
      string();
      const auto n_dims = scalar<uint32_t>();
      uint64_t n_elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) n_elements *= scalar<uint64_t>();
      const auto type = scalar<uint32_t>();
      out.tensor_offset_field.push_back(pos_);
      const auto offset = scalar<uint64_t>();
      const auto traits = type_traits(type);
      EXPECT_TRUE(traits.has_value());
      const size_t n_bytes = n_elements / traits->block_elems * traits->block_bytes;
      out.tensor_data.push_back({offset, offset + n_bytes});  // made absolute below
    }
    out.header_end = pos_;
    out.counts[tensors_count].end = pos_;
    out.counts[tensors_count + 1].end = pos_;
    out.data_offset = (pos_ + out.alignment - 1) / out.alignment * out.alignment;
    for (auto& d : out.tensor_data) {
      d.start += out.data_offset;
      d.end += out.data_offset;
    }
    return out;
  }

 private:
  void unit(size_t n) {
    layout_->units.push_back({pos_, pos_ + n});
    pos_ += n;
  }
  template <typename T>
  T peek() const {
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    return v;
  }
  template <typename T>
  T scalar() {
    const T v = peek<T>();
    unit(sizeof(T));
    return v;
  }
  std::string_view string() {
    const auto len = peek<uint64_t>();
    const std::string_view s = bytes_.substr(pos_ + 8, len);
    unit(8 + len);
    return s;
  }
  void value(uint32_t type) {
    switch (static_cast<ValueType>(type)) {
      case ValueType::UINT8:
      case ValueType::INT8:
      case ValueType::BOOL: unit(1); return;
      case ValueType::UINT16:
      case ValueType::INT16: unit(2); return;
      case ValueType::UINT32:
      case ValueType::INT32:
      case ValueType::FLOAT32: unit(4); return;
      case ValueType::UINT64:
      case ValueType::INT64:
      case ValueType::FLOAT64: unit(8); return;
      case ValueType::STRING: string(); return;
      case ValueType::ARRAY: {
        const auto elem = scalar<uint32_t>();
        const size_t count_at = pos_;
        const auto count = scalar<uint64_t>();
        const size_t container = layout_->counts.size();
        layout_->counts.push_back({count_at, 0});
        std::vector<size_t> items;
        for (uint64_t i = 0; i < count; ++i) {
          items.push_back(pos_);
          value(elem);
        }
        items.push_back(pos_);
        layout_->counts[container].end = pos_;
        layout_->array_items.push_back(std::move(items));
        return;
      }
    }
    ADD_FAILURE() << "walker: unknown value type " << type;
  }

  std::string_view bytes_;
  size_t pos_ = 0;
  Layout* layout_ = nullptr;
};

// The message of the FormatError File::open(path) throws; a test failure (and "") when it
// throws nothing or anything else.
inline std::string open_error(const std::filesystem::path& path) {
  try {
    auto f = File::open(path);
    ADD_FAILURE() << path << " opened without error";
  } catch (const FormatError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": expected FormatError, got " << typeid(e).name() << ": " << e.what();
  }
  return "";
}

inline std::string at_byte(size_t at) {
  return fmt::format("at byte {}:", at);
}

// Opening `path` throws FormatError naming the file, "at byte `at`", what was expected, and
// every string in `mentions`.
inline void expect_format_error(const std::filesystem::path& path, size_t at,
                                const std::vector<std::string>& mentions = {}) {
  const std::string msg = open_error(path);
  if (msg.empty()) return;
  EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(at_byte(at)), std::string::npos) << "want " << at_byte(at) << " in: " << msg;
  EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
  for (const auto& m : mentions) EXPECT_NE(msg.find(m), std::string::npos) << m << " in: " << msg;
}

// Exact equality: same type tag, same held alternative, floats bit for bit, arrays item by item.
inline ::testing::AssertionResult same_value(const Value& want, const Value& got,
                                             const std::string& where) {
  if (want.type != got.type) {
    return ::testing::AssertionFailure() << where << ": type " << value_type_name(got.type)
                                         << ", expected " << value_type_name(want.type);
  }
  if (want.data.index() != got.data.index()) {
    return ::testing::AssertionFailure()
           << where << ": alternative " << got.data.index() << ", expected " << want.data.index();
  }
  if (const auto* a = std::get_if<Array>(&want.data)) {
    const auto& b = std::get<Array>(got.data);
    if (a->element_type != b.element_type || a->items.size() != b.items.size()) {
      return ::testing::AssertionFailure()
             << where << ": array of " << b.items.size() << " " << value_type_name(b.element_type)
             << ", expected " << a->items.size() << " " << value_type_name(a->element_type);
    }
    for (size_t i = 0; i < a->items.size(); ++i) {
      auto r = same_value(a->items[i], b.items[i], fmt::format("{}[{}]", where, i));
      if (!r) return r;
    }
    return ::testing::AssertionSuccess();
  }
  if (const auto* d = std::get_if<double>(&want.data)) {
    const double e = std::get<double>(got.data);
    if (std::memcmp(d, &e, sizeof(double)) != 0) {
      return ::testing::AssertionFailure() << where << ": " << e << ", expected " << *d;
    }
    return ::testing::AssertionSuccess();
  }
  const bool equal = std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Array> || std::is_same_v<T, double>) {
          return false;  // handled above
        } else {
          return x == std::get<T>(got.data);
        }
      },
      want.data);
  if (!equal) return ::testing::AssertionFailure() << where << ": values differ";
  return ::testing::AssertionSuccess();
}

}  // namespace augur::gguf::test

namespace augur::gguf::test {

inline Value uint_value(ValueType type, uint64_t v) {
  return Value{type, v};
}
inline Value int_value(ValueType type, int64_t v) {
  return Value{type, v};
}
inline Value float_value(ValueType type, double v) {
  return Value{type, v};
}
inline Value bool_value(bool v) {
  return Value{ValueType::BOOL, v};
}
inline Value string_value(std::string_view v) {
  return Value{ValueType::STRING, v};
}
inline Value array_value(ValueType element_type, std::vector<Value> items) {
  return Value{ValueType::ARRAY, Array{element_type, std::move(items)}};
}

// Metadata of every value type: extremes of each integer width, NaN/-0/inf floats, strings with
// NUL and UTF-8, flat arrays of each type, an empty array, arrays of arrays with mixed inner
// element types, and an array nested to the deepest level File accepts (8).
inline std::vector<std::pair<std::string, Value>> synthetic_metadata() {
  using VT = ValueType;
  std::vector<std::pair<std::string, Value>> kv;
  kv.emplace_back("general.architecture", string_value("synthetic"));
  kv.emplace_back("test.u8", uint_value(VT::UINT8, 255));
  kv.emplace_back("test.i8", int_value(VT::INT8, -128));
  kv.emplace_back("test.u16", uint_value(VT::UINT16, 65535));
  kv.emplace_back("test.i16", int_value(VT::INT16, -32768));
  kv.emplace_back("test.u32", uint_value(VT::UINT32, 4294967295u));
  kv.emplace_back("test.i32", int_value(VT::INT32, std::numeric_limits<int32_t>::min()));
  kv.emplace_back("test.u64", uint_value(VT::UINT64, std::numeric_limits<uint64_t>::max()));
  kv.emplace_back("test.i64", int_value(VT::INT64, std::numeric_limits<int64_t>::min()));
  kv.emplace_back("test.f32", float_value(VT::FLOAT32, -1.5));
  kv.emplace_back("test.f32.nan",
                  float_value(VT::FLOAT32, double{std::numeric_limits<float>::quiet_NaN()}));
  kv.emplace_back("test.f32.negzero", float_value(VT::FLOAT32, -0.0));
  kv.emplace_back("test.f64", float_value(VT::FLOAT64, 3.141592653589793));
  kv.emplace_back("test.f64.inf",
                  float_value(VT::FLOAT64, -std::numeric_limits<double>::infinity()));
  kv.emplace_back("test.bool.true", bool_value(true));
  kv.emplace_back("test.bool.false", bool_value(false));
  kv.emplace_back("test.string", string_value(std::string_view("h\xc3\xa9llo\0world", 12)));
  kv.emplace_back("test.string.empty", string_value(""));
  kv.emplace_back("test.array.u8",
                  array_value(VT::UINT8, {uint_value(VT::UINT8, 0), uint_value(VT::UINT8, 255)}));
  kv.emplace_back("test.array.i8", array_value(VT::INT8, {int_value(VT::INT8, -1)}));
  kv.emplace_back("test.array.u16", array_value(VT::UINT16, {uint_value(VT::UINT16, 513)}));
  kv.emplace_back("test.array.i16", array_value(VT::INT16, {int_value(VT::INT16, -513)}));
  kv.emplace_back("test.array.u32", array_value(VT::UINT32, {uint_value(VT::UINT32, 70000)}));
  kv.emplace_back("test.array.i32",
                  array_value(VT::INT32, {int_value(VT::INT32, -70000), int_value(VT::INT32, 3)}));
  kv.emplace_back("test.array.u64", array_value(VT::UINT64, {uint_value(VT::UINT64, 1ull << 40)}));
  kv.emplace_back("test.array.i64", array_value(VT::INT64, {int_value(VT::INT64, -(1ll << 40))}));
  kv.emplace_back("test.array.f32", array_value(VT::FLOAT32, {float_value(VT::FLOAT32, 0.25),
                                                              float_value(VT::FLOAT32, -2.0)}));
  kv.emplace_back("test.array.f64", array_value(VT::FLOAT64, {float_value(VT::FLOAT64, 1e300)}));
  kv.emplace_back("test.array.bool", array_value(VT::BOOL, {bool_value(true), bool_value(false)}));
  kv.emplace_back("test.array.string", array_value(VT::STRING, {string_value("a"), string_value(""),
                                                                string_value("ccc")}));
  kv.emplace_back("test.array.empty", array_value(VT::INT32, {}));
  kv.emplace_back(
      "test.array.nested",
      array_value(VT::ARRAY,
                  {array_value(VT::UINT8, {uint_value(VT::UINT8, 1), uint_value(VT::UINT8, 2)}),
                   array_value(VT::STRING, {string_value("x"), string_value("yz")}),
                   array_value(VT::FLOAT32, {}),
                   array_value(VT::ARRAY, {array_value(VT::BOOL, {bool_value(true)})})}));
  Value deep = array_value(VT::INT32, {int_value(VT::INT32, 7)});
  for (int level = 1; level < 8; ++level) deep = array_value(VT::ARRAY, {deep});
  kv.emplace_back("test.array.deep", std::move(deep));
  kv.emplace_back("test.string.last", string_value("end"));
  return kv;
}

struct SyntheticTensor {
  std::string name;
  TensorType type;
  std::vector<int64_t> ne;
  size_t n_bytes;
};

// Tensors of several types and ranks whose sizes are mostly not multiples of 32 (so padding is
// exercised).
inline std::vector<SyntheticTensor> synthetic_tensors() {
  return {
      {"t.f32", TensorType::F32, {3, 2}, 24}, {"t.q4_0", TensorType::Q4_0, {64, 2}, 72},
      {"t.f16", TensorType::F16, {5}, 10},    {"t.i8", TensorType::I8, {7, 1, 1, 2}, 14},
      {"t.q8_0", TensorType::Q8_0, {32}, 34},
  };
}

// Deterministic, tensor-specific bytes.
inline std::vector<uint8_t> synthetic_data(size_t tensor, size_t n_bytes) {
  std::vector<uint8_t> out(n_bytes);
  for (size_t i = 0; i < n_bytes; ++i) out[i] = static_cast<uint8_t>(tensor * 37 + i * 13 + 7);
  return out;
}

// Writes the synthetic file: all of synthetic_metadata() then all of synthetic_tensors().
// `alignment` 0 leaves general.alignment unset (the default, 32).
inline void write_synthetic(const std::filesystem::path& path, uint32_t version = 3,
                            uint32_t alignment = 0) {
  Writer w(path, version);
  if (alignment != 0) w.set_alignment(alignment);
  for (const auto& [key, value] : synthetic_metadata()) w.set(key, value);
  const auto tensors = synthetic_tensors();
  for (const auto& t : tensors) EXPECT_EQ(w.add_tensor(t.name, t.type, t.ne), t.n_bytes) << t.name;
  w.write_header();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto data = synthetic_data(i, tensors[i].n_bytes);
    w.write_tensor_data(tensors[i].name, data);
  }
  w.finish();
}

}  // namespace augur::gguf::test
