#include "gguf/file.h"

#include <gtest/gtest.h>

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
