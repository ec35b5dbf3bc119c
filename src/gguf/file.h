// A GGUF file (v2/v3), memory-mapped and fully validated at open: metadata of every value
// type (nested arrays included), tensor infos, alignment and data bounds. Owns the mapping;
// every string_view and tensor pointer handed out lives as long as the File.
// Decoding tensor data is tensor/'s job.
// Limits enforced on hostile input (each failure is a FormatError with file, byte and
// expectation): arrays nest at most 8 deep and hold at most 2^24 elements in all; tensors have
// 1..4 dims of 1..2^40 and at most 2^50 elements; general.alignment is an integer power of two up
// to 2^20; tensor data lies inside the file, aligned, without overlaps. Counts are checked
// against the bytes left before anything is allocated for them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "gguf/types.h"

namespace augur::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

std::string_view value_type_name(ValueType type);

struct Value;
struct Array {
  ValueType element_type = ValueType::UINT8;
  std::vector<Value> items;
};

// One metadata value. Integers keep their sign class; `type` keeps the exact stored width.
struct Value {
  using Data = std::variant<uint64_t, int64_t, double, bool, std::string_view, Array>;
  ValueType type = ValueType::UINT8;
  Data data;

  Value() = default;
  // A constructor rather than aggregate initialisation so that vector::emplace_back(type, x)
  // also builds with compilers that lack C++20's parenthesised aggregates (clang 14).
  template <typename T>
  Value(ValueType t, T&& d) : type(t), data(std::forward<T>(d)) {}

  bool is_integer() const;
  // Converting accessors; throw FormatError naming `key` when the value does not fit.
  int64_t as_int(std::string_view key) const;
  double as_float(std::string_view key) const;
  bool as_bool(std::string_view key) const;
  std::string_view as_string(std::string_view key) const;
  const Array& as_array(std::string_view key) const;
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the contiguous dimension
  TensorType type = TensorType::F32;
  uint64_t offset = 0;  // relative to the data section
  const uint8_t* data = nullptr;
  size_t n_bytes = 0;

  int64_t n_elements() const;
  int64_t rows() const;  // product of ne[1..]
};

class File {
 public:
  // Maps and validates `path`; throws FormatError (file, byte offset, expectation) on any defect.
  [[nodiscard]] static std::unique_ptr<File> open(const std::filesystem::path& path);
  // Validates a copy of `bytes` held in memory (64-byte aligned, like a mapping's tensor data)
  // exactly as open() validates a file; `name` stands for the path in every message.
  [[nodiscard]] static std::unique_ptr<File> from_bytes(std::string name,
                                                        std::span<const uint8_t> bytes);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }

  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: throw FormatError naming the key when it is missing or of the wrong kind.
  int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::string_view get_string(std::string_view key) const;
  const Array& get_array(std::string_view key) const;
  std::optional<int64_t> get_int_opt(std::string_view key) const;
  std::optional<double> get_float_opt(std::string_view key) const;
  std::optional<bool> get_bool_opt(std::string_view key) const;
  std::optional<std::string_view> get_string_opt(std::string_view key) const;

  // Whole-array helpers for large arrays (tokens, scores, merges).
  std::vector<std::string_view> get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Throws FormatError naming the tensor when it is absent.
  const TensorInfo& tensor(std::string_view name) const;

  // Hint the kernel to read the data section in (used for load progress).
  void prefetch() const;
  // Hint that [begin, begin + n) of the data will not be read soon (a weight a kernel reads from
  // its own packed copy): a mapping drops those whole pages from the process's resident memory,
  // to be read back from the page cache if touched again; a heap copy keeps them.
  void release(const uint8_t* begin, size_t n) const;

 private:
  File() = default;
  std::string path_;
  int fd_ = -1;
  const uint8_t* base_ = nullptr;
  bool mapped_ = false;  // base_ is an mmap of fd_; otherwise an aligned heap copy
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;

  friend class Parser;
};

}  // namespace augur::gguf
