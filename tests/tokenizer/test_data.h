// Test helper: reads the shared tokenizer fixtures (FIXTURES.md section 9) and opens
// tokenizers from the shared data directory (../shared), caching each so a test binary loads every
// vocabulary once.
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace augur::tokenizer::testing {

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The .inp file: each case is followed by the separator; the trailing one makes no extra case.
inline std::vector<std::string> read_cases(const std::filesystem::path& path) {
  static constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
  const std::string content = read_bytes(path);
  std::vector<std::string> cases;
  size_t begin = 0;
  while (begin < content.size()) {
    const size_t end = content.find(kSeparator, begin);
    if (end == std::string::npos) {
      cases.push_back(content.substr(begin));
      break;
    }
    cases.push_back(content.substr(begin, end - begin));
    begin = end + kSeparator.size();
  }
  return cases;
}

// The .out file: one line of space-separated ids per case.
inline std::vector<std::vector<int32_t>> read_expected_ids(const std::filesystem::path& path) {
  std::vector<std::vector<int32_t>> all;
  std::istringstream lines(read_bytes(path));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::vector<int32_t> ids;
    for (int32_t id; fields >> id;) ids.push_back(id);
    all.push_back(std::move(ids));
  }
  return all;
}

inline std::filesystem::path vocab_path(std::string_view name) {
  return augur::testing::fixtures_dir() / "tokenizers" /
         ("ggml-vocab-" + std::string(name) + ".gguf");
}

// Loads (once per process) the tokenizer of a GGUF under the shared data directory.
inline const Tokenizer& shared_tokenizer(const std::filesystem::path& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[path.string()];
  if (!slot) slot = Tokenizer::from_gguf(*gguf::File::open(path));
  return *slot;
}

inline const Tokenizer& vocab_tokenizer(std::string_view name) {
  return shared_tokenizer(vocab_path(name));
}

inline const Tokenizer& zoo_tokenizer() {
  return shared_tokenizer(augur::testing::models_dir() / "zoo-target-f16.gguf");
}

// The id whose vocabulary text is exactly `text`, or -1.
inline int32_t id_of_text(const Tokenizer& tok, std::string_view text) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.token_text(id) == text) return id;
  }
  return -1;
}

}  // namespace augur::tokenizer::testing
