// Writes a GGUF file (v3, or v2 on request) that gguf::File reads back bit for bit: metadata of
// every value type (nested arrays included), tensor infos and aligned tensor data.
// Tensor data is streamed: declare every tensor (name, type, shape) first, write the header, then
// hand over each tensor's bytes in declaration order, whole or in chunks. Only the metadata and
// tensor infos are held in memory. The file appears at `path` only when finish() succeeds; until
// then it is written to `path` + ".partial", which an abandoned Writer removes.
// Misuse (wrong sizes, order, types, duplicate names) throws InvalidArgument before anything is
// written; I/O failures throw Error. Reading and validating files is File's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "gguf/types.h"

namespace augur::gguf {

class Writer {
 public:
  static constexpr uint32_t kDefaultAlignment = 32;
  static constexpr std::string_view kAlignmentKey = "general.alignment";

  // `version` is 3 (default) or 2; the two share one little-endian layout.
  explicit Writer(std::filesystem::path path, uint32_t version = 3);
  ~Writer();  // removes the partial file unless finish() succeeded
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t alignment() const { return alignment_; }

  // --- Metadata, written in the order set; each key once; only before write_header(). ---
  // Any value File can return, checked: `type` must match the held alternative, integers must fit
  // their width, array items must all have the array's element type, arrays nest at most 8 deep.
  // "general.alignment" must be a UINT32 power of two in [1, 2^20]; it sets the data alignment.
  void set(std::string_view key, const Value& value);
  void set_u8(std::string_view key, uint8_t value);
  void set_i8(std::string_view key, int8_t value);
  void set_u16(std::string_view key, uint16_t value);
  void set_i16(std::string_view key, int16_t value);
  void set_u32(std::string_view key, uint32_t value);
  void set_i32(std::string_view key, int32_t value);
  void set_u64(std::string_view key, uint64_t value);
  void set_i64(std::string_view key, int64_t value);
  void set_f32(std::string_view key, float value);
  void set_f64(std::string_view key, double value);
  void set_bool(std::string_view key, bool value);
  void set_string(std::string_view key, std::string_view value);
  void set_alignment(uint32_t alignment) { set_u32(kAlignmentKey, alignment); }

  // Flat arrays, encoded straight from the span (no per-item Value); nested ones go through set().
  void set_array(std::string_view key, std::span<const uint8_t> items);
  void set_array(std::string_view key, std::span<const int8_t> items);
  void set_array(std::string_view key, std::span<const uint16_t> items);
  void set_array(std::string_view key, std::span<const int16_t> items);
  void set_array(std::string_view key, std::span<const uint32_t> items);
  void set_array(std::string_view key, std::span<const int32_t> items);
  void set_array(std::string_view key, std::span<const uint64_t> items);
  void set_array(std::string_view key, std::span<const int64_t> items);
  void set_array(std::string_view key, std::span<const float> items);
  void set_array(std::string_view key, std::span<const double> items);
  void set_array(std::string_view key, std::span<const bool> items);
  void set_array(std::string_view key, std::span<const std::string> items);
  void set_array(std::string_view key, std::span<const std::string_view> items);

  // --- Tensors, in file order; only before write_header(). ---
  // `ne` in ggml order (ne[0] contiguous), 1..4 dims of 1..2^40, ne[0] a whole number of blocks;
  // names are 1..63 bytes (llama.cpp's limit) and unique. Returns the tensor's data size in bytes.
  size_t add_tensor(std::string_view name, TensorType type, std::span<const int64_t> ne);
  size_t add_tensor(std::string_view name, TensorType type, std::initializer_list<int64_t> ne) {
    return add_tensor(name, type, std::span<const int64_t>(ne.begin(), ne.size()));
  }

  // Writes magic, counts, metadata, tensor infos (offsets laid out back to back, each aligned)
  // and the padding up to the data section. Creates the partial file.
  void write_header();

  // Appends bytes of tensor `name`, which must be the first tensor not yet complete; a tensor may
  // arrive in several chunks but never more bytes than add_tensor() returned. Padding follows
  // automatically once a tensor is complete.
  void write_tensor_data(std::string_view name, std::span<const uint8_t> bytes);
  void write_tensor_data(std::string_view name, std::span<const std::byte> bytes) {
    write_tensor_data(name, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                     bytes.size()));
  }

  // Checks every tensor is complete, flushes, closes and renames the file into place. Writes the
  // header first when it has not been (a metadata-only file).
  void finish();

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    size_t n_bytes = 0;
    uint64_t offset = 0;  // relative to the data section; set by write_header()
  };
  enum class State { kDeclaring, kWritingData, kFinished, kFailed };

  // Checks state and key before a value is encoded; commit_key appends it once encoded.
  void begin_key(std::string_view key, ValueType type);
  void commit_key(std::string_view key, ValueType type, std::string_view payload);
  template <typename T>
  void set_flat_array(std::string_view key, ValueType element_type, std::span<const T> items);
  void require_state(State state, std::string_view action) const;
  void write_bytes(const void* data, size_t n);
  void write_padding();
  [[noreturn]] void io_failed(std::string_view action);

  std::filesystem::path path_;
  std::filesystem::path partial_path_;
  uint32_t version_;
  uint64_t alignment_ = kDefaultAlignment;
  State state_ = State::kDeclaring;

  std::string kv_bytes_;  // encoded key-value pairs, in order
  uint64_t n_kv_ = 0;
  std::set<std::string, std::less<>> keys_;
  std::vector<PendingTensor> tensors_;
  std::set<std::string, std::less<>> tensor_names_;

  std::FILE* out_ = nullptr;
  uint64_t file_pos_ = 0;          // bytes written so far
  size_t current_ = 0;             // first tensor whose data is not complete
  size_t written_in_current_ = 0;  // bytes of tensors_[current_] written so far
};

}  // namespace augur::gguf
