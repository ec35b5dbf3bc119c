#include "gguf/file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>

#include "common/error.h"

namespace augur::gguf {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::UINT8: return "uint8";
    case ValueType::INT8: return "int8";
    case ValueType::UINT16: return "uint16";
    case ValueType::INT16: return "int16";
    case ValueType::UINT32: return "uint32";
    case ValueType::INT32: return "int32";
    case ValueType::FLOAT32: return "float32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::UINT64: return "uint64";
    case ValueType::INT64: return "int64";
    case ValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

namespace {

constexpr std::align_val_t kBytesAlignment{64};
constexpr int kMaxArrayDepth = 8;
constexpr size_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr uint64_t kMaxDim = uint64_t{1} << 40;
constexpr uint64_t kMaxElements = uint64_t{1} << 50;
constexpr uint64_t kMaxAlignment = uint64_t{1} << 20;
// Every array element becomes a ~48-byte Value, so a hostile file of S bytes could ask for ~48*S
// bytes of memory. Real files hold well under 2M elements in all arrays together (vocab, scores,
// types, merges); cap the total so memory stays bounded whatever the file size.
constexpr uint64_t kMaxArrayElements = uint64_t{1} << 24;
// Counts are only bounded by the file size, which for a multi-GB model still allows absurd
// reservations; never reserve more than this up front and let vectors grow as items parse.
constexpr uint64_t kMaxReserve = uint64_t{1} << 16;

// Smallest encoded size of one value of `type`, used to bound counts before allocating.
size_t min_encoded_size(ValueType type) {
  switch (type) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL: return 1;
    case ValueType::UINT16:
    case ValueType::INT16: return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32: return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64:
    case ValueType::STRING: return 8;
    case ValueType::ARRAY: return 12;
  }
  return 1;
}

bool valid_value_type(uint32_t raw) {
  return raw <= static_cast<uint32_t>(ValueType::FLOAT64);
}

uint32_t byte_swap(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

// "0-3, 6-30, 34, 35, 39": the tensor type ids this build knows, for error messages.
std::string known_type_ids() {
  std::string out;
  uint32_t id = 0;
  while (id < 256) {
    if (!type_traits(id)) {
      ++id;
      continue;
    }
    uint32_t last = id;
    while (last + 1 < 256 && type_traits(last + 1)) ++last;
    if (!out.empty()) out += ", ";
    out += last > id + 1 ? fmt::format("{}-{}", id, last)
           : last == id  ? fmt::format("{}", id)
                         : fmt::format("{}, {}", id, last);
    id = last + 1;
  }
  return out;
}

}  // namespace

// Bounds-checked cursor over the mapping; every failure names file, offset and expectation.
class Parser {
 public:
  Parser(const std::string& path, const uint8_t* base, size_t size)
      : path_(path), base_(base), size_(size) {}

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw FormatError(fmt::format("{}: at byte {}: {}", path_, at, what));
  }

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  void need(size_t n, std::string_view what) const {
    if (n > remaining()) {
      fail(pos_, fmt::format("expected {} ({} bytes) but only {} bytes remain (file truncated?)",
                             what, n, remaining()));
    }
  }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  std::string_view read_string(std::string_view what) {
    const size_t at = pos_;
    const auto len = read<uint64_t>(what);
    if (len > remaining()) {
      fail(at, fmt::format("{}: string length {} exceeds the {} bytes left in the file (expected "
                           "at most {}; file truncated?)",
                           what, len, remaining(), remaining()));
    }
    std::string_view s(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return s;
  }

  // Appends the next value of `type` to `out`, constructed in place: values sit in vectors of
  // tens of thousands (vocabularies), and building each as a temporary and moving it in made up
  // most of the parse time in Debug builds.
  void append_value(std::vector<Value>& out, ValueType type, std::string_view key, int depth) {
    switch (type) {
      case ValueType::UINT8: out.emplace_back(type, uint64_t{read<uint8_t>(key)}); return;
      case ValueType::INT8: out.emplace_back(type, int64_t{read<int8_t>(key)}); return;
      case ValueType::UINT16: out.emplace_back(type, uint64_t{read<uint16_t>(key)}); return;
      case ValueType::INT16: out.emplace_back(type, int64_t{read<int16_t>(key)}); return;
      case ValueType::UINT32: out.emplace_back(type, uint64_t{read<uint32_t>(key)}); return;
      case ValueType::INT32: out.emplace_back(type, int64_t{read<int32_t>(key)}); return;
      case ValueType::UINT64: out.emplace_back(type, read<uint64_t>(key)); return;
      case ValueType::INT64: out.emplace_back(type, read<int64_t>(key)); return;
      case ValueType::FLOAT32: out.emplace_back(type, double{read<float>(key)}); return;
      case ValueType::FLOAT64: out.emplace_back(type, read<double>(key)); return;
      case ValueType::BOOL: {
        const size_t at = pos_;
        const auto b = read<uint8_t>(key);
        if (b > 1) fail(at, fmt::format("key '{}': bool value {}, expected 0 or 1", key, b));
        out.emplace_back(type, b == 1);
        return;
      }
      case ValueType::STRING: out.emplace_back(type, read_string(key)); return;
      case ValueType::ARRAY: {
        if (depth >= kMaxArrayDepth) {
          fail(pos_, fmt::format("key '{}': arrays nested deeper than expected (at most {} levels)",
                                 key, kMaxArrayDepth));
        }
        const size_t at = pos_;
        const auto raw_type = read<uint32_t>(key);
        if (!valid_value_type(raw_type)) {
          fail(at, fmt::format("key '{}': unknown array element type {} (expected 0..12)", key,
                               raw_type));
        }
        const auto elem_type = static_cast<ValueType>(raw_type);
        const size_t count_at = pos_;
        const auto count = read<uint64_t>(key);
        const uint64_t fits = remaining() / min_encoded_size(elem_type);
        if (count > fits) {
          fail(count_at, fmt::format("key '{}': array of {} {} elements cannot fit in the {} bytes "
                                     "left in the file (expected at most {})",
                                     key, count, value_type_name(elem_type), remaining(), fits));
        }
        if (count > kMaxArrayElements - n_array_elements_) {
          fail(count_at,
               fmt::format("key '{}': array of {} elements takes the metadata past {} "
                           "array elements in total (expected at most {} more)",
                           key, count, kMaxArrayElements, kMaxArrayElements - n_array_elements_));
        }
        n_array_elements_ += count;
        auto& array = std::get<Array>(out.emplace_back(type, Array{elem_type, {}}).data);
        array.items.reserve(std::min(count, kMaxReserve));
        for (uint64_t i = 0; i < count; ++i) append_value(array.items, elem_type, key, depth + 1);
        return;
      }
    }
  }

  void parse(File& f) {
    const auto magic = read<uint32_t>("magic 'GGUF'");
    if (std::memcmp(&magic, "GGUF", 4) != 0) {
      fail(0, fmt::format("bad magic 0x{:08x}, expected 'GGUF' (not a GGUF file)", magic));
    }
    f.version_ = read<uint32_t>("version");
    if (f.version_ != 2 && f.version_ != 3) {
      const bool swapped = byte_swap(f.version_) == 2 || byte_swap(f.version_) == 3;
      fail(4, fmt::format("unsupported GGUF version {}, expected 2 or 3{}", f.version_,
                          swapped ? " (this looks like a big-endian file)" : ""));
    }
    const auto n_tensors = read<uint64_t>("tensor count");
    const auto n_kv = read<uint64_t>("metadata count");
    // Each key-value pair needs at least 8 (key length) + 4 (type) + 1 bytes; each tensor info
    // 8+4+8+4+8.
    if (n_kv > remaining() / 13) {
      fail(16, fmt::format("metadata count {} cannot fit in a {}-byte file (expected at most {})",
                           n_kv, size_, remaining() / 13));
    }
    if (n_tensors > remaining() / 32) {
      fail(8, fmt::format("tensor count {} cannot fit in a {}-byte file (expected at most {})",
                          n_tensors, size_, remaining() / 32));
    }

    size_t alignment_type_at = 0;
    size_t alignment_value_at = 0;
    f.kv_.reserve(std::min(n_kv, kMaxReserve));
    for (uint64_t i = 0; i < n_kv; ++i) {
      const size_t key_at = pos_;
      std::string key(read_string("metadata key"));
      if (f.kv_index_.count(key)) {
        fail(key_at, fmt::format("duplicate metadata key '{}', expected each key once", key));
      }
      const size_t type_at = pos_;
      const auto raw_type = read<uint32_t>("metadata value type");
      if (!valid_value_type(raw_type)) {
        fail(type_at,
             fmt::format("key '{}': unknown value type {} (expected 0..12)", key, raw_type));
      }
      if (key == "general.alignment") {
        alignment_type_at = type_at;
        alignment_value_at = pos_;
      }
      std::vector<Value> value;
      value.reserve(1);
      append_value(value, static_cast<ValueType>(raw_type), key, 0);
      f.kv_index_.emplace(key, f.kv_.size());
      f.kv_.emplace_back(std::move(key), std::move(value.front()));
    }

    if (const Value* a = f.find("general.alignment")) {
      if (!a->is_integer()) {
        fail(alignment_type_at,
             fmt::format("general.alignment has type {}, expected an unsigned integer",
                         value_type_name(a->type)));
      }
      const auto* u = std::get_if<uint64_t>(&a->data);
      const auto* i = std::get_if<int64_t>(&a->data);
      const bool negative = i && *i < 0;
      const uint64_t align = u ? *u : static_cast<uint64_t>(*i);
      if (negative || align == 0 || (align & (align - 1)) != 0 || align > kMaxAlignment) {
        fail(alignment_value_at,
             fmt::format("general.alignment {}, expected a power of two in [1, {}]",
                         negative ? fmt::format("{}", *i) : fmt::format("{}", align),
                         kMaxAlignment));
      }
      f.alignment_ = align;
    }

    std::vector<size_t> offset_field_at;
    offset_field_at.reserve(std::min(n_tensors, kMaxReserve));
    f.tensors_.reserve(std::min(n_tensors, kMaxReserve));
    for (uint64_t i = 0; i < n_tensors; ++i) {
      TensorInfo t;
      const size_t name_at = pos_;
      t.name = std::string(read_string("tensor name"));
      if (f.tensor_index_.count(t.name)) {
        fail(name_at, fmt::format("duplicate tensor '{}', expected each name once", t.name));
      }
      const size_t dims_at = pos_;
      const auto n_dims = read<uint32_t>("tensor dimension count");
      if (n_dims == 0 || n_dims > kMaxDims) {
        fail(dims_at,
             fmt::format("tensor '{}': {} dimensions, expected 1..{}", t.name, n_dims, kMaxDims));
      }
      uint64_t n_elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const size_t ne_at = pos_;
        const auto ne = read<uint64_t>("tensor dimension");
        if (ne == 0 || ne > kMaxDim) {
          fail(ne_at, fmt::format("tensor '{}': dimension {} = {}, expected 1..{}", t.name, d, ne,
                                  kMaxDim));
        }
        if (n_elements > kMaxElements / ne) {
          fail(ne_at, fmt::format("tensor '{}': dimension {} = {} makes the element count exceed "
                                  "{} (expected a smaller shape)",
                                  t.name, d, ne, kMaxElements));
        }
        t.ne.push_back(static_cast<int64_t>(ne));
        n_elements *= ne;
      }
      const size_t type_at = pos_;
      const auto raw_type = read<uint32_t>("tensor type");
      const auto tt = type_traits(raw_type);
      if (!tt) {
        fail(type_at, fmt::format("tensor '{}': unknown tensor type id {} (expected one of {})",
                                  t.name, raw_type, known_type_ids()));
      }
      t.type = static_cast<TensorType>(raw_type);
      if (t.ne[0] % tt->block_elems != 0) {
        fail(type_at, fmt::format("tensor '{}': row length {} is not a multiple of the {} block "
                                  "size {} (expected a whole number of blocks)",
                                  t.name, t.ne[0], tt->name, tt->block_elems));
      }
      t.n_bytes = static_cast<size_t>(n_elements / tt->block_elems) * tt->block_bytes;
      const size_t off_at = pos_;
      t.offset = read<uint64_t>("tensor data offset");
      if (t.offset % f.alignment_ != 0) {
        fail(off_at,
             fmt::format("tensor '{}': data offset {} is not a multiple of the alignment {} "
                         "(expected the data to start aligned)",
                         t.name, t.offset, f.alignment_));
      }
      offset_field_at.push_back(off_at);
      f.tensor_index_.emplace(t.name, f.tensors_.size());
      f.tensors_.push_back(std::move(t));
    }

    const uint64_t header_end = pos_;
    f.data_offset_ = (header_end + f.alignment_ - 1) / f.alignment_ * f.alignment_;
    for (size_t i = 0; i < f.tensors_.size(); ++i) {
      auto& t = f.tensors_[i];
      // The data offset field itself is at fault when it points outside the file; otherwise the
      // data starts in the file and the bytes it needs are missing (truncation).
      if (t.offset > size_ || f.data_offset_ > size_ - t.offset) {
        fail(offset_field_at[i],
             fmt::format("tensor '{}': data offset {} puts its data at file byte {} beyond the "
                         "end of the {}-byte file (expected data to start by byte {})",
                         t.name, t.offset,
                         t.offset > std::numeric_limits<uint64_t>::max() - f.data_offset_
                             ? std::string("2^64 or more")
                             : fmt::format("{}", f.data_offset_ + t.offset),
                         size_, size_));
      }
      const uint64_t start = f.data_offset_ + t.offset;
      if (t.n_bytes > size_ - start) {
        fail(start, fmt::format("tensor '{}': {} bytes of data run past the end of the {}-byte "
                                "file (expected the file to hold at least {} bytes; truncated?)",
                                t.name, t.n_bytes, size_, start + t.n_bytes));
      }
      t.data = base_ + start;
    }

    // Tensor data must not overlap: llama.cpp lays tensors out back to back and rejects anything
    // else, so overlapping ranges mean corrupt offsets (two weights silently sharing bytes).
    std::vector<size_t> by_offset(f.tensors_.size());
    for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = i;
    std::sort(by_offset.begin(), by_offset.end(), [&](size_t a, size_t b) {
      return f.tensors_[a].offset < f.tensors_[b].offset ||
             (f.tensors_[a].offset == f.tensors_[b].offset && a < b);
    });
    for (size_t k = 1; k < by_offset.size(); ++k) {
      const auto& prev = f.tensors_[by_offset[k - 1]];
      const auto& cur = f.tensors_[by_offset[k]];
      if (prev.offset + prev.n_bytes > cur.offset) {
        fail(offset_field_at[by_offset[k]],
             fmt::format("tensor '{}': data offset {} overlaps tensor '{}' (data offsets {}..{}), "
                         "expected tensor data not to overlap",
                         cur.name, cur.offset, prev.name, prev.offset, prev.offset + prev.n_bytes));
      }
    }
  }

 private:
  const std::string& path_;
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t n_array_elements_ = 0;
};

std::unique_ptr<File> File::open(const std::filesystem::path& path) {
  std::unique_ptr<File> f(new File());
  f->path_ = path.string();
  f->fd_ = ::open(f->path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (f->fd_ < 0) {
    throw Error(fmt::format("{}: cannot open: {}", f->path_, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(f->fd_, &st) != 0) {
    throw Error(fmt::format("{}: cannot stat: {}", f->path_, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw FormatError(fmt::format("{}: not a regular file, expected a GGUF file", f->path_));
  }
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ == 0)
    throw FormatError(fmt::format("{}: at byte 0: empty file, expected GGUF header", f->path_));
  void* map = ::mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, f->fd_, 0);
  if (map == MAP_FAILED) {
    throw Error(
        fmt::format("{}: cannot mmap {} bytes: {}", f->path_, f->size_, std::strerror(errno)));
  }
  f->base_ = static_cast<const uint8_t*>(map);
  f->mapped_ = true;
  Parser parser(f->path_, f->base_, f->size_);
  parser.parse(*f);
  return f;
}

std::unique_ptr<File> File::from_bytes(std::string name, std::span<const uint8_t> bytes) {
  std::unique_ptr<File> f(new File());
  f->path_ = std::move(name);
  f->size_ = bytes.size();
  if (f->size_ == 0)
    throw FormatError(fmt::format("{}: at byte 0: empty file, expected GGUF header", f->path_));
  auto* copy = static_cast<uint8_t*>(::operator new(f->size_, kBytesAlignment));
  std::memcpy(copy, bytes.data(), f->size_);
  f->base_ = copy;
  Parser parser(f->path_, f->base_, f->size_);
  parser.parse(*f);
  return f;
}

File::~File() {
  if (base_ && mapped_) ::munmap(const_cast<uint8_t*>(base_), size_);
  if (base_ && !mapped_) ::operator delete(const_cast<uint8_t*>(base_), kBytesAlignment);
  if (fd_ >= 0) ::close(fd_);
}

void File::prefetch() const {
  if (mapped_ && size_ > data_offset_) {
    ::madvise(const_cast<uint8_t*>(base_), size_, MADV_WILLNEED);
  }
}

void File::release(const uint8_t* begin, size_t n) const {
  if (!mapped_ || begin < base_ || begin + n > base_ + size_) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(begin) + n) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

const Value* File::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw FormatError(fmt::format("{}: missing tensor '{}'", path_, name));
  return *t;
}

namespace {
[[noreturn]] void missing(const std::string& path, std::string_view key) {
  throw FormatError(fmt::format("{}: missing metadata key '{}'", path, key));
}
}  // namespace

int64_t File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) missing(path_, key);
  return v->as_int(key);
}
double File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) missing(path_, key);
  return v->as_float(key);
}
bool File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) missing(path_, key);
  return v->as_bool(key);
}
std::string_view File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) missing(path_, key);
  return v->as_string(key);
}
const Array& File::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) missing(path_, key);
  return v->as_array(key);
}
std::optional<int64_t> File::get_int_opt(std::string_view key) const {
  const Value* v = find(key);
  return v ? std::optional(v->as_int(key)) : std::nullopt;
}
std::optional<double> File::get_float_opt(std::string_view key) const {
  const Value* v = find(key);
  return v ? std::optional(v->as_float(key)) : std::nullopt;
}
std::optional<bool> File::get_bool_opt(std::string_view key) const {
  const Value* v = find(key);
  return v ? std::optional(v->as_bool(key)) : std::nullopt;
}
std::optional<std::string_view> File::get_string_opt(std::string_view key) const {
  const Value* v = find(key);
  return v ? std::optional(v->as_string(key)) : std::nullopt;
}

std::vector<std::string_view> File::get_string_array(std::string_view key) const {
  const Array& a = get_array(key);
  std::vector<std::string_view> out;
  out.reserve(a.items.size());
  for (const auto& item : a.items) out.push_back(item.as_string(key));
  return out;
}
std::vector<float> File::get_float_array(std::string_view key) const {
  const Array& a = get_array(key);
  std::vector<float> out;
  out.reserve(a.items.size());
  for (const auto& item : a.items) out.push_back(static_cast<float>(item.as_float(key)));
  return out;
}
std::vector<int64_t> File::get_int_array(std::string_view key) const {
  const Array& a = get_array(key);
  std::vector<int64_t> out;
  out.reserve(a.items.size());
  for (const auto& item : a.items) out.push_back(item.as_int(key));
  return out;
}

bool Value::is_integer() const {
  return std::holds_alternative<uint64_t>(data) || std::holds_alternative<int64_t>(data);
}

int64_t Value::as_int(std::string_view key) const {
  if (const auto* u = std::get_if<uint64_t>(&data)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw FormatError(fmt::format("metadata key '{}': value {} out of range", key, *u));
    }
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&data)) return *i;
  throw FormatError(
      fmt::format("metadata key '{}': expected an integer, found {}", key, value_type_name(type)));
}

double Value::as_float(std::string_view key) const {
  if (const auto* d = std::get_if<double>(&data)) return *d;
  if (is_integer()) return static_cast<double>(as_int(key));
  throw FormatError(
      fmt::format("metadata key '{}': expected a number, found {}", key, value_type_name(type)));
}

bool Value::as_bool(std::string_view key) const {
  if (const auto* b = std::get_if<bool>(&data)) return *b;
  if (is_integer()) return as_int(key) != 0;
  throw FormatError(
      fmt::format("metadata key '{}': expected a bool, found {}", key, value_type_name(type)));
}

std::string_view Value::as_string(std::string_view key) const {
  if (const auto* s = std::get_if<std::string_view>(&data)) return *s;
  throw FormatError(
      fmt::format("metadata key '{}': expected a string, found {}", key, value_type_name(type)));
}

const Array& Value::as_array(std::string_view key) const {
  if (const auto* a = std::get_if<Array>(&data)) return *a;
  throw FormatError(
      fmt::format("metadata key '{}': expected an array, found {}", key, value_type_name(type)));
}

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (auto d : ne) n *= d;
  return n;
}

int64_t TensorInfo::rows() const {
  return ne.empty() ? 0 : n_elements() / ne[0];
}

}  // namespace augur::gguf
