#include "gguf/writer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "common/error.h"

namespace augur::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF is written little-endian");

namespace {

// Mirror File's limits so a Writer never produces a file the reader rejects.
constexpr int kMaxArrayDepth = 8;
constexpr size_t kMaxDims = 4;
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr int64_t kMaxElements = int64_t{1} << 50;
constexpr uint32_t kMaxAlignment = uint32_t{1} << 20;
constexpr size_t kMaxNameBytes = 63;  // llama.cpp: GGML_MAX_NAME (64) including the NUL

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

std::string_view alternative_name(const Value& v) {
  switch (v.data.index()) {
    case 0: return "an unsigned integer";
    case 1: return "a signed integer";
    case 2: return "a float";
    case 3: return "a bool";
    case 4: return "a string";
    case 5: return "an array";
  }
  return "nothing";
}

[[noreturn]] void wrong_alternative(std::string_view key, const Value& v, std::string_view want) {
  throw InvalidArgument(fmt::format("metadata key '{}': value of type {} holds {}, expected {}",
                                    key, value_type_name(v.type), alternative_name(v), want));
}

template <typename T>
T checked_int(std::string_view key, const Value& v) {
  std::string shown;
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    if (std::in_range<T>(*u)) return static_cast<T>(*u);
    shown = fmt::format("{}", *u);
  } else if (const auto* i = std::get_if<int64_t>(&v.data)) {
    if (std::in_range<T>(*i)) return static_cast<T>(*i);
    shown = fmt::format("{}", *i);
  } else {
    wrong_alternative(key, v, "an integer");
  }
  throw InvalidArgument(fmt::format("metadata key '{}': {} value {} out of range, expected {}..{}",
                                    key, value_type_name(v.type), shown,
                                    std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}

bool valid_value_type(ValueType type) {
  return static_cast<uint32_t>(type) <= static_cast<uint32_t>(ValueType::FLOAT64);
}

// Appends the payload of `v` (everything after its type tag) to `out`.
void encode(std::string& out, std::string_view key, const Value& v, int depth) {
  switch (v.type) {
    case ValueType::UINT8: put(out, checked_int<uint8_t>(key, v)); return;
    case ValueType::INT8: put(out, checked_int<int8_t>(key, v)); return;
    case ValueType::UINT16: put(out, checked_int<uint16_t>(key, v)); return;
    case ValueType::INT16: put(out, checked_int<int16_t>(key, v)); return;
    case ValueType::UINT32: put(out, checked_int<uint32_t>(key, v)); return;
    case ValueType::INT32: put(out, checked_int<int32_t>(key, v)); return;
    case ValueType::UINT64: put(out, checked_int<uint64_t>(key, v)); return;
    case ValueType::INT64: put(out, checked_int<int64_t>(key, v)); return;
    case ValueType::FLOAT32: {
      const auto* d = std::get_if<double>(&v.data);
      if (!d) wrong_alternative(key, v, "a float");
      if (std::isfinite(*d) && std::fabs(*d) > std::numeric_limits<float>::max()) {
        throw InvalidArgument(
            fmt::format("metadata key '{}': float32 value {} out of range, expected |value| <= {}",
                        key, *d, std::numeric_limits<float>::max()));
      }
      put(out, static_cast<float>(*d));
      return;
    }
    case ValueType::FLOAT64: {
      const auto* d = std::get_if<double>(&v.data);
      if (!d) wrong_alternative(key, v, "a float");
      put(out, *d);
      return;
    }
    case ValueType::BOOL: {
      const auto* b = std::get_if<bool>(&v.data);
      if (!b) wrong_alternative(key, v, "a bool");
      put<uint8_t>(out, *b ? 1 : 0);
      return;
    }
    case ValueType::STRING: {
      const auto* s = std::get_if<std::string_view>(&v.data);
      if (!s) wrong_alternative(key, v, "a string");
      put_string(out, *s);
      return;
    }
    case ValueType::ARRAY: {
      const auto* a = std::get_if<Array>(&v.data);
      if (!a) wrong_alternative(key, v, "an array");
      if (depth >= kMaxArrayDepth) {
        throw InvalidArgument(fmt::format(
            "metadata key '{}': arrays nested deeper than {} levels, expected at most {}", key,
            kMaxArrayDepth, kMaxArrayDepth));
      }
      if (!valid_value_type(a->element_type)) {
        throw InvalidArgument(
            fmt::format("metadata key '{}': array element type {}, expected 0..12", key,
                        static_cast<uint32_t>(a->element_type)));
      }
      put(out, static_cast<uint32_t>(a->element_type));
      put<uint64_t>(out, a->items.size());
      for (size_t index = 0; index < a->items.size(); ++index) {
        const Value& item = a->items[index];
        if (item.type != a->element_type) {
          throw InvalidArgument(fmt::format(
              "metadata key '{}': array item {} has type {}, expected the array's "
              "element type {}",
              key, index, value_type_name(item.type), value_type_name(a->element_type)));
        }
        encode(out, key, item, depth + 1);
      }
      return;
    }
  }
  throw InvalidArgument(fmt::format("metadata key '{}': value type {}, expected 0..12", key,
                                    static_cast<uint32_t>(v.type)));
}

template <typename T>
std::string encode_flat_array(ValueType type, std::span<const T> items) {
  std::string out;
  out.reserve(12 + items.size() * sizeof(T));
  put(out, static_cast<uint32_t>(type));
  put<uint64_t>(out, items.size());
  for (const T& item : items) put(out, item);
  return out;
}

template <typename S>
std::string encode_string_array(std::span<const S> items) {
  std::string out;
  put(out, static_cast<uint32_t>(ValueType::STRING));
  put<uint64_t>(out, items.size());
  for (const S& item : items) put_string(out, item);
  return out;
}

std::string shape_string(std::span<const int64_t> ne) {
  return fmt::format("[{}]", fmt::join(ne, ", "));
}

}  // namespace

Writer::Writer(std::filesystem::path path, uint32_t version)
    : path_(std::move(path)), partial_path_(path_.string() + ".partial"), version_(version) {
  if (version_ != 2 && version_ != 3) {
    throw InvalidArgument(
        fmt::format("{}: GGUF version {} requested, expected 2 or 3", path_.string(), version_));
  }
}

Writer::~Writer() {
  if (out_) std::fclose(out_);
  if (state_ != State::kDeclaring && state_ != State::kFinished) {
    std::error_code ignored;
    std::filesystem::remove(partial_path_, ignored);
  }
}

void Writer::require_state(State state, std::string_view action) const {
  if (state_ == state) return;
  std::string_view now = state_ == State::kDeclaring     ? "before write_header()"
                         : state_ == State::kWritingData ? "after write_header()"
                         : state_ == State::kFinished    ? "after finish()"
                                                         : "after an I/O error";
  std::string_view want = state == State::kDeclaring     ? "before write_header()"
                          : state == State::kWritingData ? "between write_header() and finish()"
                                                         : "once";
  throw InvalidArgument(
      fmt::format("{}: cannot {} {}, expected it {}", path_.string(), action, now, want));
}

void Writer::begin_key(std::string_view key, ValueType type) {
  require_state(State::kDeclaring, "set metadata");
  if (key.empty()) {
    throw InvalidArgument(fmt::format("{}: empty metadata key, expected a name", path_.string()));
  }
  if (keys_.count(key)) {
    throw InvalidArgument(fmt::format("{}: metadata key '{}' set twice, expected each key once",
                                      path_.string(), key));
  }
  if (key == kAlignmentKey && type != ValueType::UINT32) {
    throw InvalidArgument(fmt::format("{}: {} of type {}, expected uint32", path_.string(), key,
                                      value_type_name(type)));
  }
}

void Writer::set(std::string_view key, const Value& value) {
  begin_key(key, value.type);
  std::string payload;
  encode(payload, key, value, 0);
  if (key == kAlignmentKey) {
    const uint32_t alignment = checked_int<uint32_t>(key, value);
    if (alignment == 0 || !std::has_single_bit(alignment) || alignment > kMaxAlignment) {
      throw InvalidArgument(fmt::format("{}: {} {}, expected a power of two in [1, {}]",
                                        path_.string(), key, alignment, kMaxAlignment));
    }
    alignment_ = alignment;
  }
  commit_key(key, value.type, payload);
}

void Writer::set_u8(std::string_view key, uint8_t v) {
  set(key, Value{ValueType::UINT8, uint64_t{v}});
}
void Writer::set_i8(std::string_view key, int8_t v) {
  set(key, Value{ValueType::INT8, int64_t{v}});
}
void Writer::set_u16(std::string_view key, uint16_t v) {
  set(key, Value{ValueType::UINT16, uint64_t{v}});
}
void Writer::set_i16(std::string_view key, int16_t v) {
  set(key, Value{ValueType::INT16, int64_t{v}});
}
void Writer::set_u32(std::string_view key, uint32_t v) {
  set(key, Value{ValueType::UINT32, uint64_t{v}});
}
void Writer::set_i32(std::string_view key, int32_t v) {
  set(key, Value{ValueType::INT32, int64_t{v}});
}
void Writer::set_u64(std::string_view key, uint64_t v) {
  set(key, Value{ValueType::UINT64, v});
}
void Writer::set_i64(std::string_view key, int64_t v) {
  set(key, Value{ValueType::INT64, v});
}
void Writer::set_f32(std::string_view key, float v) {
  set(key, Value{ValueType::FLOAT32, double{v}});
}
void Writer::set_f64(std::string_view key, double v) {
  set(key, Value{ValueType::FLOAT64, v});
}
void Writer::set_bool(std::string_view key, bool v) {
  set(key, Value{ValueType::BOOL, v});
}
void Writer::set_string(std::string_view key, std::string_view v) {
  set(key, Value{ValueType::STRING, v});
}

void Writer::commit_key(std::string_view key, ValueType type, std::string_view payload) {
  put_string(kv_bytes_, key);
  put(kv_bytes_, static_cast<uint32_t>(type));
  kv_bytes_ += payload;
  keys_.emplace(key);
  ++n_kv_;
}

template <typename T>
void Writer::set_flat_array(std::string_view key, ValueType element_type,
                            std::span<const T> items) {
  begin_key(key, ValueType::ARRAY);
  commit_key(key, ValueType::ARRAY, encode_flat_array(element_type, items));
}

void Writer::set_array(std::string_view key, std::span<const uint8_t> items) {
  set_flat_array(key, ValueType::UINT8, items);
}
void Writer::set_array(std::string_view key, std::span<const int8_t> items) {
  set_flat_array(key, ValueType::INT8, items);
}
void Writer::set_array(std::string_view key, std::span<const uint16_t> items) {
  set_flat_array(key, ValueType::UINT16, items);
}
void Writer::set_array(std::string_view key, std::span<const int16_t> items) {
  set_flat_array(key, ValueType::INT16, items);
}
void Writer::set_array(std::string_view key, std::span<const uint32_t> items) {
  set_flat_array(key, ValueType::UINT32, items);
}
void Writer::set_array(std::string_view key, std::span<const int32_t> items) {
  set_flat_array(key, ValueType::INT32, items);
}
void Writer::set_array(std::string_view key, std::span<const uint64_t> items) {
  set_flat_array(key, ValueType::UINT64, items);
}
void Writer::set_array(std::string_view key, std::span<const int64_t> items) {
  set_flat_array(key, ValueType::INT64, items);
}
void Writer::set_array(std::string_view key, std::span<const float> items) {
  set_flat_array(key, ValueType::FLOAT32, items);
}
void Writer::set_array(std::string_view key, std::span<const double> items) {
  set_flat_array(key, ValueType::FLOAT64, items);
}
// bool is one byte holding 0 or 1, exactly as GGUF stores it.
void Writer::set_array(std::string_view key, std::span<const bool> items) {
  set_flat_array(key, ValueType::BOOL, items);
}
void Writer::set_array(std::string_view key, std::span<const std::string> items) {
  begin_key(key, ValueType::ARRAY);
  commit_key(key, ValueType::ARRAY, encode_string_array(items));
}
void Writer::set_array(std::string_view key, std::span<const std::string_view> items) {
  begin_key(key, ValueType::ARRAY);
  commit_key(key, ValueType::ARRAY, encode_string_array(items));
}

size_t Writer::add_tensor(std::string_view name, TensorType type, std::span<const int64_t> ne) {
  require_state(State::kDeclaring, "add a tensor");
  const std::string& file = path_.string();
  if (name.empty() || name.size() > kMaxNameBytes) {
    throw InvalidArgument(fmt::format("{}: tensor name '{}' is {} bytes, expected 1..{}", file,
                                      name, name.size(), kMaxNameBytes));
  }
  if (tensor_names_.count(name)) {
    throw InvalidArgument(
        fmt::format("{}: tensor '{}' added twice, expected each name once", file, name));
  }
  const auto tt = type_traits(static_cast<uint32_t>(type));
  if (!tt) {
    throw InvalidArgument(fmt::format("{}: tensor '{}': unknown tensor type id {}", file, name,
                                      static_cast<uint32_t>(type)));
  }
  if (ne.empty() || ne.size() > kMaxDims) {
    throw InvalidArgument(fmt::format("{}: tensor '{}': {} dimensions, expected 1..{}", file, name,
                                      ne.size(), kMaxDims));
  }
  int64_t n_elements = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] < 1 || ne[d] > kMaxDim || n_elements > kMaxElements / ne[d]) {
      throw InvalidArgument(
          fmt::format("{}: tensor '{}': shape {}, expected dimensions in 1..{} and at most {} "
                      "elements",
                      file, name, shape_string(ne), kMaxDim, kMaxElements));
    }
    n_elements *= ne[d];
  }
  if (ne[0] % tt->block_elems != 0) {
    throw InvalidArgument(fmt::format(
        "{}: tensor '{}': shape {} has rows of {} elements, expected a multiple of the {} block "
        "size {}",
        file, name, shape_string(ne), ne[0], tt->name, tt->block_elems));
  }
  PendingTensor t;
  t.name = std::string(name);
  t.type = type;
  t.ne.assign(ne.begin(), ne.end());
  t.n_bytes = static_cast<size_t>(n_elements / tt->block_elems) * tt->block_bytes;
  tensor_names_.emplace(t.name);
  tensors_.push_back(std::move(t));
  return tensors_.back().n_bytes;
}

void Writer::write_header() {
  require_state(State::kDeclaring, "write the header");
  uint64_t data_size = 0;
  for (auto& t : tensors_) {
    t.offset = data_size;
    data_size += (t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
  }

  std::string header;
  header.append("GGUF", 4);
  put<uint32_t>(header, version_);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, n_kv_);
  header += kv_bytes_;
  for (const auto& t : tensors_) {
    put_string(header, t.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.ne.size()));
    for (int64_t dim : t.ne) put<uint64_t>(header, static_cast<uint64_t>(dim));
    put<uint32_t>(header, static_cast<uint32_t>(t.type));
    put<uint64_t>(header, t.offset);
  }

  out_ = std::fopen(partial_path_.c_str(), "wb");
  if (!out_) io_failed("create");
  state_ = State::kWritingData;
  write_bytes(header.data(), header.size());
  write_padding();
  current_ = 0;
  written_in_current_ = 0;
}

void Writer::write_tensor_data(std::string_view name, std::span<const uint8_t> bytes) {
  require_state(State::kWritingData, "write tensor data");
  const std::string& file = path_.string();
  if (current_ == tensors_.size()) {
    throw InvalidArgument(
        fmt::format("{}: {} bytes for tensor '{}' after every declared tensor is complete", file,
                    bytes.size(), name));
  }
  const PendingTensor& t = tensors_[current_];
  if (name != t.name) {
    throw InvalidArgument(fmt::format(
        "{}: data for tensor '{}'{}, expected data for '{}' next ({} of {} bytes written)", file,
        name, tensor_names_.count(name) ? " out of order" : " which was never added", t.name,
        written_in_current_, t.n_bytes));
  }
  const size_t left = t.n_bytes - written_in_current_;
  if (bytes.size() > left) {
    throw InvalidArgument(fmt::format(
        "{}: {} bytes for tensor '{}' ({} {}), expected at most the {} of its {} bytes not yet "
        "written",
        file, bytes.size(), name, type_name(t.type), shape_string(t.ne), left, t.n_bytes));
  }
  write_bytes(bytes.data(), bytes.size());
  written_in_current_ += bytes.size();
  if (written_in_current_ == t.n_bytes) {
    write_padding();
    ++current_;
    written_in_current_ = 0;
  }
}

void Writer::finish() {
  if (state_ == State::kDeclaring) write_header();
  require_state(State::kWritingData, "finish");
  if (current_ < tensors_.size()) {
    const PendingTensor& t = tensors_[current_];
    throw InvalidArgument(fmt::format(
        "{}: finish() with tensor '{}' at {} of {} bytes, expected all {} tensors complete",
        path_.string(), t.name, written_in_current_, t.n_bytes, tensors_.size()));
  }
  std::FILE* out = std::exchange(out_, nullptr);
  if (std::fflush(out) != 0) {
    const int err = errno;
    std::fclose(out);
    errno = err;
    io_failed("flush");
  }
  if (std::fclose(out) != 0) io_failed("close");
  std::error_code ec;
  std::filesystem::rename(partial_path_, path_, ec);
  if (ec) {
    state_ = State::kFailed;
    throw Error(fmt::format("{}: cannot move {} into place: {}", path_.string(),
                            partial_path_.string(), ec.message()));
  }
  state_ = State::kFinished;
}

void Writer::write_bytes(const void* data, size_t n) {
  if (n == 0) return;
  if (std::fwrite(data, 1, n, out_) != n) io_failed("write");
  file_pos_ += n;
}

void Writer::write_padding() {
  static constexpr uint8_t kZeros[4096] = {};
  uint64_t pad = (alignment_ - file_pos_ % alignment_) % alignment_;
  while (pad > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof(kZeros)));
    write_bytes(kZeros, n);
    pad -= n;
  }
}

void Writer::io_failed(std::string_view action) {
  const int err = errno;
  state_ = State::kFailed;
  throw Error(fmt::format("{}: cannot {} {}: {}", path_.string(), action, partial_path_.string(),
                          std::strerror(err)));
}

}  // namespace augur::gguf
