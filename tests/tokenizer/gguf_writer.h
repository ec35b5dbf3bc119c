// Test helper: writes small vocab-only GGUF v3 files, so tests can build tokenizers with
// metadata the shared fixtures do not have (unknown pre, user-defined tokens, add_eos, ...).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace augur::tokenizer::testing {

class GgufWriter {
 public:
  void add_string(std::string_view key, std::string_view value) {
    begin_kv(key, kString);
    put_string(value);
  }
  void add_bool(std::string_view key, bool value) {
    begin_kv(key, kBool);
    body_.push_back(value ? 1 : 0);
  }
  void add_u32(std::string_view key, uint32_t value) {
    begin_kv(key, kUint32);
    put(value);
  }
  void add_strings(std::string_view key, const std::vector<std::string>& values) {
    begin_array(key, kString, values.size());
    for (const auto& v : values) put_string(v);
  }
  void add_floats(std::string_view key, const std::vector<float>& values) {
    begin_array(key, kFloat32, values.size());
    for (const float v : values) put(v);
  }
  void add_ints(std::string_view key, const std::vector<int32_t>& values) {
    begin_array(key, kInt32, values.size());
    for (const int32_t v : values) put(v);
  }

  void write(const std::filesystem::path& path) const {
    std::string file = "GGUF";
    append(file, uint32_t{3});
    append(file, uint64_t{0});  // tensors
    append(file, n_kv_);
    file += body_;
    while (file.size() % 32 != 0) file.push_back('\0');
    std::ofstream(path, std::ios::binary)
        .write(file.data(), static_cast<std::streamsize>(file.size()));
  }

 private:
  static constexpr uint32_t kUint32 = 4, kInt32 = 5, kFloat32 = 6, kBool = 7, kString = 8,
                            kArray = 9;

  template <typename T>
  static void append(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  template <typename T>
  void put(T value) {
    append(body_, value);
  }
  void put_string(std::string_view s) {
    put(uint64_t{s.size()});
    body_ += s;
  }
  void begin_kv(std::string_view key, uint32_t type) {
    put_string(key);
    put(type);
    ++n_kv_;
  }
  void begin_array(std::string_view key, uint32_t element_type, size_t n) {
    begin_kv(key, kArray);
    put(element_type);
    put(uint64_t{n});
  }

  std::string body_;
  uint64_t n_kv_ = 0;
};

}  // namespace augur::tokenizer::testing
