// Helpers to read the shared reference files (JSON and raw little-endian f32 matrices).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace augur::testing {

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

// Raw float32 rows [n_rows, n_cols].
inline std::vector<float> read_f32(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  in.seekg(0, std::ios::end);
  const auto bytes = static_cast<size_t>(in.tellg());
  in.seekg(0);
  std::vector<float> data(bytes / sizeof(float));
  in.read(reinterpret_cast<char*>(data.data()),
          static_cast<std::streamsize>(data.size() * sizeof(float)));
  return data;
}

// One JSON value per non-empty line.
inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

inline float max_abs_diff(const float* a, const float* b, size_t n) {
  float worst = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    if (!(d <= worst)) worst = d;  // NaN propagates as a failure
  }
  return worst;
}

}  // namespace augur::testing
