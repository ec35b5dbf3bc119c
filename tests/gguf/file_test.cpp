#include "gguf/file.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "test_paths.h"

namespace augur::gguf {
namespace {

TEST(GgufFile, ReadsTinyLlamaMetadataAndTensors) {
  auto f = File::open(testing::fixtures_dir() / "tiny-llama.gguf");
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.embedding_length"), 256);
  EXPECT_EQ(f->tensors().size(), 39u);
  const auto& q = f->tensor("blk.0.attn_q.weight");
  EXPECT_EQ(q.ne.size(), 2u);
  EXPECT_EQ(q.ne[0], 256);
  EXPECT_EQ(q.type, TensorType::F32);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").size(), 512u);
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
