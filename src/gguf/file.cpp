#include "gguf/file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

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

constexpr int kMaxArrayDepth = 8;
constexpr size_t kMaxDims = 4;  // GGML_MAX_DIMS

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
      fail(at, fmt::format("{}: string length {} exceeds the {} bytes left in the file", what, len,
                           remaining()));
    }
    std::string_view s(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return s;
  }

  Value read_value(ValueType type, std::string_view key, int depth) {
    Value v;
    v.type = type;
    switch (type) {
      case ValueType::UINT8: v.data = uint64_t{read<uint8_t>(key)}; break;
      case ValueType::INT8: v.data = int64_t{read<int8_t>(key)}; break;
      case ValueType::UINT16: v.data = uint64_t{read<uint16_t>(key)}; break;
      case ValueType::INT16: v.data = int64_t{read<int16_t>(key)}; break;
      case ValueType::UINT32: v.data = uint64_t{read<uint32_t>(key)}; break;
      case ValueType::INT32: v.data = int64_t{read<int32_t>(key)}; break;
      case ValueType::UINT64: v.data = read<uint64_t>(key); break;
      case ValueType::INT64: v.data = read<int64_t>(key); break;
      case ValueType::FLOAT32: v.data = double{read<float>(key)}; break;
      case ValueType::FLOAT64: v.data = read<double>(key); break;
      case ValueType::BOOL: {
        const size_t at = pos_;
        const auto b = read<uint8_t>(key);
        if (b > 1) fail(at, fmt::format("key '{}': bool value {} is neither 0 nor 1", key, b));
        v.data = b == 1;
        break;
      }
      case ValueType::STRING: v.data = read_string(key); break;
      case ValueType::ARRAY: {
        if (depth >= kMaxArrayDepth) {
          fail(pos_, fmt::format("key '{}': arrays nested deeper than {}", key, kMaxArrayDepth));
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
        if (count > remaining() / min_encoded_size(elem_type)) {
          fail(count_at, fmt::format("key '{}': array of {} {} elements cannot fit in the {} bytes "
                                     "left in the file",
                                     key, count, value_type_name(elem_type), remaining()));
        }
        Array array;
        array.element_type = elem_type;
        array.items.reserve(count);
        for (uint64_t i = 0; i < count; ++i)
          array.items.push_back(read_value(elem_type, key, depth + 1));
        v.data = std::move(array);
        break;
      }
    }
    return v;
  }

  void parse(File& f) {
    const auto magic = read<uint32_t>("magic 'GGUF'");
    if (std::memcmp(&magic, "GGUF", 4) != 0) {
      fail(0, fmt::format("bad magic 0x{:08x}, expected 'GGUF' (not a GGUF file)", magic));
    }
    f.version_ = read<uint32_t>("version");
    if (f.version_ != 2 && f.version_ != 3) {
      fail(4, fmt::format("unsupported GGUF version {} (supported: 2, 3)", f.version_));
    }
    const auto n_tensors = read<uint64_t>("tensor count");
    const auto n_kv = read<uint64_t>("metadata count");
    // Each key-value pair needs at least 8 (key length) + 4 (type) + 1 bytes; each tensor info
    // 8+4+8+4+8.
    if (n_kv > remaining() / 13) {
      fail(16, fmt::format("metadata count {} cannot fit in a {}-byte file", n_kv, size_));
    }
    if (n_tensors > remaining() / 32) {
      fail(8, fmt::format("tensor count {} cannot fit in a {}-byte file", n_tensors, size_));
    }

    f.kv_.reserve(n_kv);
    for (uint64_t i = 0; i < n_kv; ++i) {
      const size_t key_at = pos_;
      std::string key(read_string("metadata key"));
      if (f.kv_index_.count(key)) fail(key_at, fmt::format("duplicate metadata key '{}'", key));
      const size_t type_at = pos_;
      const auto raw_type = read<uint32_t>("metadata value type");
      if (!valid_value_type(raw_type)) {
        fail(type_at,
             fmt::format("key '{}': unknown value type {} (expected 0..12)", key, raw_type));
      }
      Value v = read_value(static_cast<ValueType>(raw_type), key, 0);
      f.kv_index_.emplace(key, f.kv_.size());
      f.kv_.emplace_back(std::move(key), std::move(v));
    }

    if (const Value* a = f.find("general.alignment")) {
      if (!a->is_integer()) fail(0, "general.alignment is not an integer");
      const int64_t align = a->as_int("general.alignment");
      if (align <= 0 || (align & (align - 1)) != 0 || align > (1 << 20)) {
        fail(0, fmt::format("general.alignment {} is not a power of two in [1, 2^20]", align));
      }
      f.alignment_ = static_cast<uint64_t>(align);
    }

    f.tensors_.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) {
      TensorInfo t;
      const size_t name_at = pos_;
      t.name = std::string(read_string("tensor name"));
      if (f.tensor_index_.count(t.name))
        fail(name_at, fmt::format("duplicate tensor '{}'", t.name));
      const size_t dims_at = pos_;
      const auto n_dims = read<uint32_t>("tensor dimension count");
      if (n_dims == 0 || n_dims > kMaxDims) {
        fail(dims_at,
             fmt::format("tensor '{}': {} dimensions, expected 1..{}", t.name, n_dims, kMaxDims));
      }
      int64_t n_elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const size_t ne_at = pos_;
        const auto ne = read<uint64_t>("tensor dimension");
        if (ne == 0 || ne > (uint64_t{1} << 40) ||
            static_cast<uint64_t>(n_elements) > (uint64_t{1} << 50) / ne) {
          fail(ne_at, fmt::format("tensor '{}': dimension {} = {} is zero or absurdly large",
                                  t.name, d, ne));
        }
        t.ne.push_back(static_cast<int64_t>(ne));
        n_elements *= static_cast<int64_t>(ne);
      }
      const size_t type_at = pos_;
      const auto raw_type = read<uint32_t>("tensor type");
      const auto tt = type_traits(raw_type);
      if (!tt)
        fail(type_at, fmt::format("tensor '{}': unknown tensor type id {}", t.name, raw_type));
      t.type = static_cast<TensorType>(raw_type);
      if (t.ne[0] % tt->block_elems != 0) {
        fail(type_at, fmt::format("tensor '{}': row length {} is not a multiple of the {} block "
                                  "size {}",
                                  t.name, t.ne[0], tt->name, tt->block_elems));
      }
      t.n_bytes = static_cast<size_t>(n_elements / tt->block_elems) * tt->block_bytes;
      const size_t off_at = pos_;
      t.offset = read<uint64_t>("tensor data offset");
      if (t.offset % f.alignment_ != 0) {
        fail(off_at,
             fmt::format("tensor '{}': data offset {} is not a multiple of the alignment {}",
                         t.name, t.offset, f.alignment_));
      }
      f.tensor_index_.emplace(t.name, f.tensors_.size());
      f.tensors_.push_back(std::move(t));
    }

    const uint64_t header_end = pos_;
    f.data_offset_ = (header_end + f.alignment_ - 1) / f.alignment_ * f.alignment_;
    const uint64_t data_size = size_ >= f.data_offset_ ? size_ - f.data_offset_ : 0;
    for (auto& t : f.tensors_) {
      if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
        fail(f.data_offset_ + t.offset,
             fmt::format("tensor '{}' ({} bytes at data offset {}) runs past the end of the file "
                         "(data section holds {} bytes; file truncated?)",
                         t.name, t.n_bytes, t.offset, data_size));
      }
      t.data = base_ + f.data_offset_ + t.offset;
    }
  }

 private:
  const std::string& path_;
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
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
  if (!S_ISREG(st.st_mode)) throw FormatError(fmt::format("{}: not a regular file", f->path_));
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ == 0)
    throw FormatError(fmt::format("{}: at byte 0: empty file, expected GGUF header", f->path_));
  void* map = ::mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, f->fd_, 0);
  if (map == MAP_FAILED) {
    throw Error(
        fmt::format("{}: cannot mmap {} bytes: {}", f->path_, f->size_, std::strerror(errno)));
  }
  f->base_ = static_cast<const uint8_t*>(map);
  Parser parser(f->path_, f->base_, f->size_);
  parser.parse(*f);
  return f;
}

File::~File() {
  if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void File::prefetch() const {
  if (base_ && size_ > data_offset_) {
    ::madvise(const_cast<uint8_t*>(base_), size_, MADV_WILLNEED);
  }
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
