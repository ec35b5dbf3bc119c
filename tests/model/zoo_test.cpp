// The zoo models against llama.cpp's greedy continuations (shared/models/zoo-ref.json, same
// prompt ids). For F16 weights llama.cpp rounds activations to F16 where augur computes in F32;
// for Q8_0 both run the same integer products on Q8_0 activations and differ only in the float
// summation order of other ops. So logits differ slightly and a continuation may legitimately
// part ways at a near-tie. Each continuation must be identical at least up to
// (and including) the first step whose recorded top-1 margin is below the tolerance for the
// model's weight type (on a path that sums Q8_0 products per block rather than in llama.cpp's
// lane order, kernels::IntegerOrder::kBlockSums, up to but not including it); how far each one
// really matches is printed.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/matmul.h"
#include "support/model_session.h"
#include "support/reference.h"
#include "test_paths.h"

namespace augur {
namespace {

// Largest logit difference expected between augur's and llama.cpp's arithmetic.
float tolerance_for(const std::string& file) {
  if (file.find("q8_0") != std::string::npos) return 0.01f;
  return 0.1f;  // f16: F32 compute against llama.cpp's F16-rounded activations
}

class ZooTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooTest, GreedyMatchesLlamaCppUpToFirstNearTie) {
  const auto ref = testing::read_json(testing::models_dir() / "zoo-ref.json");
  const std::string file = GetParam();
  ASSERT_TRUE(ref["models"].contains(file)) << file;
  const auto& prompts = ref["models"][file]["prompts"];
  const float tol = tolerance_for(file);
  const bool block_sums =
      file.find("q8_0") != std::string::npos &&
      kernels::integer_order(kernels::current_isa()) == kernels::IntegerOrder::kBlockSums;
  testing::ModelSession s(testing::models_dir() / file, 512, 512);
  std::string report;
  for (const auto& p : prompts) {
    const auto prompt = p["prompt_ids"].get<std::vector<int32_t>>();
    const auto expected = p["greedy"].get<std::vector<int32_t>>();
    const auto margins = p["margins"].get<std::vector<float>>();
    const auto got = s.greedy(prompt, static_cast<int>(expected.size()));
    size_t must_match = expected.size();
    for (size_t k = 0; k < margins.size(); ++k) {
      if (margins[k] < tol) {
        must_match = block_sums ? k : k + 1;
        break;
      }
    }
    size_t matched = 0;
    while (matched < expected.size() && got[matched] == expected[matched]) ++matched;
    EXPECT_GE(matched, must_match)
        << file << " " << p["id"] << ": diverged at step " << matched << " (margin there "
        << margins[std::min(matched, margins.size() - 1)] << ")";
    report += " " + std::to_string(matched);
  }
  std::printf("[zoo] %s: tokens matching llama.cpp per prompt (of %zu):%s\n", file.c_str(),
              prompts[0]["greedy"].size(), report.c_str());
}

INSTANTIATE_TEST_SUITE_P(ZooModels, ZooTest,
                         ::testing::Values("zoo-target-f16.gguf", "zoo-target-q8_0.gguf",
                                           "zoo-draft-f16.gguf"),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.find(".gguf"));
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace augur
