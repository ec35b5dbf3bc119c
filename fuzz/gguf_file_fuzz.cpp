// libFuzzer target: the GGUF reader on arbitrary bytes. A file either fails with a FormatError or
// parses into metadata and tensors that every accessor a loader uses can read without leaving the
// input (the bytes are an exact-size heap copy, so ASan sees any read past the end).
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/error.h"
#include "gguf/file.h"

namespace {

using augur::gguf::Array;
using augur::gguf::File;
using augur::gguf::Value;
using augur::gguf::ValueType;

uint64_t g_sink = 0;  // what was read, so the reads cannot be optimised away (see the end)

void walk(const File& file, const Value& value, std::string_view key) {
  try {
    switch (value.type) {
      case ValueType::STRING: g_sink += value.as_string(key).size(); return;
      case ValueType::ARRAY: {
        const Array& array = value.as_array(key);
        for (const Value& item : array.items) walk(file, item, key);
        // The whole-array helpers loaders use for vocabularies; each checks the element type.
        if (array.element_type == ValueType::STRING) {
          g_sink += file.get_string_array(key).size();
        } else if (array.element_type == ValueType::FLOAT32 ||
                   array.element_type == ValueType::FLOAT64) {
          g_sink += file.get_float_array(key).size();
        } else if (array.element_type != ValueType::ARRAY &&
                   array.element_type != ValueType::BOOL) {
          g_sink += file.get_int_array(key).size();
        }
        return;
      }
      case ValueType::BOOL: g_sink += value.as_bool(key); return;
      case ValueType::FLOAT32:
      case ValueType::FLOAT64: g_sink += static_cast<uint64_t>(value.as_float(key) != 0); return;
      default: g_sink += static_cast<uint64_t>(value.as_int(key)); return;
    }
  } catch (const augur::Error&) {
    // A value that does not fit the accessor's type is a clear error, not a crash.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto file = File::from_bytes("fuzz.gguf", std::span<const uint8_t>(data, size));
    for (const auto& [key, value] : file->metadata()) {
      walk(*file, value, key);
      if (file->find(key) != &value) __builtin_trap();  // the index must agree with the list
    }
    for (const auto& t : file->tensors()) {
      g_sink += static_cast<uint64_t>(t.n_elements() + t.rows());
      if (t.n_bytes > 0) g_sink += t.data[0] + t.data[t.n_bytes - 1];  // first and last byte
      if (&file->tensor(t.name) != &t) __builtin_trap();
    }
    __asm__ volatile("" : : "r"(g_sink));
  } catch (const augur::Error&) {
    // Rejected with a message naming the file, offset and expectation: the intended outcome.
  }
  return 0;
}
