#include "gguf/file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/error.h"
#include "support/reference.h"
#include "test_paths.h"

namespace augur::gguf {
namespace {

// Against the tensor list and hyperparameters llama.cpp's gguf-py recorded in the ref.json.
TEST(GgufFile, ReadsTinyLlamaMetadataAndTensors) {
  auto f = File::open(testing::fixtures_dir() / "tiny-llama.gguf");
  const auto ref = testing::read_json(testing::fixtures_dir() / "tiny-llama.ref.json");
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), ref["arch"].get<std::string>());
  EXPECT_EQ(f->get_int("llama.embedding_length"), ref["hparams"]["dim"].get<int64_t>());
  ASSERT_EQ(f->tensors().size(), ref["tensors"].size());
  for (const auto& want : ref["tensors"]) {
    const auto& t = f->tensor(want["name"].get<std::string>());
    EXPECT_EQ(t.ne, want["ne"].get<std::vector<int64_t>>()) << t.name;
    EXPECT_EQ(type_name(t.type), want["type"].get<std::string>()) << t.name;
  }
  EXPECT_EQ(f->tensor("blk.0.attn_q.weight").type, TensorType::F32);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").size(), ref["n_vocab"].get<size_t>());
}

// The in-memory reader (the fuzz targets' entry) sees exactly what the mapped one sees, with
// 64-byte aligned tensor data, and names the given name in its errors.
TEST(GgufFile, FromBytesReadsWhatOpenReads) {
  const auto path = testing::fixtures_dir() / "tiny-llama-Q4_0.gguf";
  const auto mapped = File::open(path);
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const auto copy = File::from_bytes("in-memory", bytes);
  EXPECT_EQ(copy->path(), "in-memory");
  EXPECT_EQ(copy->file_size(), mapped->file_size());
  ASSERT_EQ(copy->metadata().size(), mapped->metadata().size());
  for (size_t i = 0; i < copy->metadata().size(); ++i)
    EXPECT_EQ(copy->metadata()[i].first, mapped->metadata()[i].first);
  EXPECT_EQ(copy->get_string_array("tokenizer.ggml.tokens"),
            mapped->get_string_array("tokenizer.ggml.tokens"));
  ASSERT_EQ(copy->tensors().size(), mapped->tensors().size());
  for (size_t i = 0; i < copy->tensors().size(); ++i) {
    const auto& a = copy->tensors()[i];
    const auto& b = mapped->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.ne, b.ne);
    ASSERT_EQ(a.n_bytes, b.n_bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 32, 0u) << a.name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.n_bytes), 0) << a.name;
  }
  const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + 100);
  try {
    (void)File::from_bytes("cut-copy", cut);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("cut-copy: at byte"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)File::from_bytes("empty", {}), FormatError);
}

// release() is only a hint: the bytes of a released tensor read back unchanged, from the mapping
// (through the page cache) and from the heap copy (which must keep its pages).
TEST(GgufFile, ReleasedTensorDataReadsBackUnchanged) {
  const auto path = testing::fixtures_dir() / "tiny-llama-Q8_0.gguf";
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const auto mapped = File::open(path);
  const auto copy = File::from_bytes("in-memory", bytes);
  for (const File* f : {mapped.get(), copy.get()}) {
    std::vector<std::vector<uint8_t>> before;
    size_t released = 0;
    for (const auto& t : f->tensors()) before.emplace_back(t.data, t.data + t.n_bytes);
    for (const auto& t : f->tensors()) {
      f->release(t.data, t.n_bytes);
      released += t.n_bytes;
    }
    EXPECT_GT(released, size_t{3 * 4096}) << "the fixture must span whole pages";
    f->release(nullptr, 0);  // outside the data: ignored
    for (size_t i = 0; i < before.size(); ++i) {
      const auto& t = f->tensors()[i];
      EXPECT_EQ(std::memcmp(t.data, before[i].data(), t.n_bytes), 0) << f->path() << " " << t.name;
    }
  }
}

TEST(GgufFile, MissingTensorNamesIt) {
  auto f = File::open(testing::fixtures_dir() / "tiny-llama.gguf");
  try {
    (void)f->tensor("blk.9.attn_q.weight");
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("blk.9.attn_q.weight"), std::string::npos);
  }
}

TEST(GgufFile, OpensVocabOnlyFile) {
  auto f = File::open(testing::fixtures_dir() / "tokenizers" / "ggml-vocab-llama-spm.gguf");
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
}

}  // namespace
}  // namespace augur::gguf
