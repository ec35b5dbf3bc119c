// Models that cannot be run: each gets a clear message naming the problem and a non-zero exit
// from the CLI (never a crash). Runs under ASan/UBSan in the sanitizer build too.
#include <gtest/gtest.h>

#include <fstream>

#include "support/gguf_rewrite.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur {
namespace {

using testing::quote;

class BadModel : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& p : made_) std::filesystem::remove(p);
  }
  std::filesystem::path make(const std::string& name, const testing::GgufEdit& edit) {
    const auto path = testing::temp_path(name + ".gguf");
    testing::rewrite_gguf(testing::fixtures_dir() / "tiny-llama.gguf", path, edit);
    made_.push_back(path);
    return path;
  }
  testing::CommandResult run(const std::filesystem::path& model) {
    return testing::run_command(quote(testing::augur_bin()) + " run -m " + quote(model) +
                                " --prompt-ids 1,2,3 -n 4");
  }
  std::vector<std::filesystem::path> made_;
};

TEST_F(BadModel, UnknownArchitectureIsNamedWithTheSupportedOnes) {
  testing::GgufEdit edit;
  edit.string_overrides["general.architecture"] = "mamba9";
  const auto r = run(make("arch", edit));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("unsupported architecture 'mamba9'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("qwen3"), std::string::npos) << r.err;
}

TEST_F(BadModel, MissingTensorIsNamed) {
  testing::GgufEdit edit;
  edit.drop_tensors = {"blk.2.ffn_up.weight"};
  const auto r = run(make("missing", edit));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("missing tensor 'blk.2.ffn_up.weight'"), std::string::npos) << r.err;
}

TEST_F(BadModel, WrongShapeNamesTensorShapeAndExpectation) {
  testing::GgufEdit edit;
  edit.reshape["blk.1.attn_q.weight"] = {512, 128};
  const auto r = run(make("shape", edit));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("'blk.1.attn_q.weight': shape [512, 128], expected [256, 256]"),
            std::string::npos)
      << r.err;
}

TEST_F(BadModel, TensorTypeWithoutKernelIsUnsupported) {
  testing::GgufEdit edit;
  edit.retype["blk.0.ffn_gate.weight"] = gguf::TensorType::Q3_K;
  const auto r = run(make("type", edit));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("blk.0.ffn_gate.weight"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Q3_K"), std::string::npos) << r.err;
}

TEST_F(BadModel, TruncatedFileGivesOffsetAndExitsNonZero) {
  const auto src = testing::fixtures_dir() / "tiny-llama-Q4_0.gguf";
  const auto size = std::filesystem::file_size(src);
  for (uintmax_t cut : {uintmax_t{3}, uintmax_t{100}, uintmax_t{5000}, size / 2, size - 1}) {
    const auto path = testing::temp_path("trunc.gguf");
    made_.push_back(path);
    std::filesystem::copy_file(src, path, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(path, cut);
    for (const char* cmd : {" run --prompt-ids 1 -m ", " tokenize -p hi -m "}) {
      const auto r = testing::run_command(quote(testing::augur_bin()) + cmd + quote(path));
      EXPECT_EQ(r.exit_code, 1) << cut << ": " << r.err;
      EXPECT_NE(r.err.find(path.string()), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("at byte"), std::string::npos) << cut << ": " << r.err;
    }
  }
}

TEST_F(BadModel, NotAGgufFile) {
  const auto path = testing::temp_path("text.gguf");
  made_.push_back(path);
  std::ofstream(path) << "hello, I am not a model\n";
  const auto r = run(path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad magic"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace augur
