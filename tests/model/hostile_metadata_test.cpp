// Models whose metadata counts are hostile (2^31 blocks) or disagree with their tensors fail at
// load, before anything is sized by the count: with the error kind, the file, the key and what
// was expected, and inside a capped address space (support/memory_cap.h). Each file is
// tiny-llama (4 blocks, embedding 256, 8 heads of 32, 2 kv heads, FFN 512, vocab 512) with one
// edit, or for the expert counts and tensors of a mixture of experts tiny-qwen3moe (top 2 of 8
// experts of FFN 128, experts stacked in 3-D tensors). Regression: block_count 2^31 ended in
// std::bad_alloc naming nothing, and 2^22 allocated 1.85 GB of layer structs before a missing
// tensor was reported.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "gguf/file.h"
#include "model/model.h"
#include "support/gguf_rewrite.h"
#include "support/memory_cap.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur::model {
namespace {

using gguf::Value;
using gguf::ValueType;

// Loading a tiny model takes a few MB; any count-sized allocation of a hostile file takes GBs.
constexpr size_t kHeadroom = size_t{256} << 20;

Value u32(uint32_t v) {
  return Value{ValueType::UINT32, uint64_t{v}};
}
Value u64(uint64_t v) {
  return Value{ValueType::UINT64, v};
}
Value i32(int32_t v) {
  return Value{ValueType::INT32, int64_t{v}};
}
Value f32(double v) {
  return Value{ValueType::FLOAT32, v};
}

struct HostileCase {
  std::string label;
  std::map<std::string, Value> metadata;  // keys set on the base fixture
  std::vector<std::string> drop_tensors;
  std::string kind;      // "FormatError" or "Unsupported"
  std::string expected;  // in the message, after "<file>: "
  std::string base = "tiny-llama";
  std::map<std::string, std::vector<int64_t>> reshape;  // tensor -> new ne (same bytes)
  std::vector<std::string> drop_keys;
};

// A case on tiny-qwen3moe.
HostileCase moe_case(std::string label, std::map<std::string, Value> metadata,
                     std::map<std::string, std::vector<int64_t>> reshape, std::string kind,
                     std::string expected, std::vector<std::string> drop_keys = {},
                     std::vector<std::string> drop_tensors = {}) {
  return {std::move(label),    std::move(metadata), std::move(drop_tensors), std::move(kind),
          std::move(expected), "tiny-qwen3moe",     std::move(reshape),      std::move(drop_keys)};
}

void PrintTo(const HostileCase& c, std::ostream* os) {
  *os << c.label;
}

std::vector<std::string> block_tensors(int block) {
  std::vector<std::string> names;
  for (const char* t :
       {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
        "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}) {
    names.push_back("blk." + std::to_string(block) + "." + t);
  }
  return names;
}

std::vector<HostileCase> hostile_cases() {
  const std::string four_blocks = "but the file has tensors for 4 blocks (blk.0..blk.3)";
  const std::string count_range = "expected a count in 1..2147483647";
  return {
      {"BlockCount2To31",
       {{"llama.block_count", u64(uint64_t{1} << 31)}},
       {},
       "FormatError",
       "llama.block_count is 2147483648, " + four_blocks},
      {"BlockCountInt32Max",
       {{"llama.block_count", u32(2147483647u)}},
       {},
       "FormatError",
       "llama.block_count is 2147483647, " + four_blocks},
      {"BlockCount2To22",
       {{"llama.block_count", u32(1u << 22)}},
       {},
       "FormatError",
       "llama.block_count is 4194304, " + four_blocks},
      {"BlockCountUint64Max",
       {{"llama.block_count", u64(std::numeric_limits<uint64_t>::max())}},
       {},
       "FormatError",
       "llama.block_count is 18446744073709551615, " + four_blocks},
      {"BlockCountNegative",
       {{"llama.block_count", i32(-1)}},
       {},
       "FormatError",
       "llama.block_count is -1, " + four_blocks},
      {"BlockCountZero",
       {{"llama.block_count", u32(0)}},
       {},
       "FormatError",
       "llama.block_count is 0, " + four_blocks},
      {"BlockCountBelowTheTensors",
       {{"llama.block_count", u32(3)}},
       {},
       "FormatError",
       "llama.block_count is 3, " + four_blocks},
      {"BlockCountNotANumber",
       {{"llama.block_count", Value{ValueType::STRING, std::string_view("four")}}},
       {},
       "FormatError",
       "llama.block_count is 'four', " + four_blocks},
      {"BlockCountAboveTheTensors",
       {},
       block_tensors(3),
       "FormatError",
       "llama.block_count is 4, but the file has tensors for 3 blocks (blk.0..blk.2)"},
      {"EmbeddingLengthHuge",
       {{"llama.embedding_length", u32(1u << 30)}},
       {},
       "FormatError",
       "llama.embedding_length is 1073741824, but tensor 'token_embd.weight' has shape [256, "
       "512], expected [1073741824, 512]"},
      {"EmbeddingLengthBeyondInt32",
       {{"llama.embedding_length", u64(uint64_t{1} << 40)}},
       {},
       "FormatError",
       "llama.embedding_length is 1099511627776, " + count_range},
      {"HeadCountHuge",
       {{"llama.attention.head_count", u32(1u << 22)}},
       {},
       "FormatError",
       "llama.embedding_length 256 is not a multiple of llama.attention.head_count 4194304 (and "
       "llama.attention.key_length is not set)"},
      {"HeadCountHugeWithKeyLength",
       {{"llama.attention.head_count", u32(1u << 22)}, {"llama.attention.key_length", u32(32)}},
       {},
       "FormatError",
       "llama.attention.head_count is 4194304 (x head_dim 32 = 134217728 query rows), but "
       "tensor 'blk.0.attn_q.weight' has shape [256, 256], expected [256, 134217728]"},
      {"HeadCountPerLayerArray",
       {{"llama.attention.head_count",
         Value{ValueType::ARRAY,
               gguf::Array{ValueType::UINT32, {u32(8), u32(8), u32(8), u32(8)}}}}},
       {},
       "FormatError",
       "llama.attention.head_count is an array of 4 uint32, " + count_range},
      {"HeadCountKvHuge",
       {{"llama.attention.head_count_kv", u32(1u << 22)}},
       {},
       "FormatError",
       "llama.attention.head_count 8 is not a multiple of llama.attention.head_count_kv 4194304"},
      {"HeadCountKvDisagreesWithTensors",
       {{"llama.attention.head_count_kv", u32(4)}},
       {},
       "FormatError",
       "llama.attention.head_count_kv is 4 (x head_dim 32 = 128 key rows), but tensor "
       "'blk.0.attn_k.weight' has shape [256, 64], expected [256, 128]"},
      {"KeyLengthHuge",
       {{"llama.attention.key_length", u32(2147483647u)}},
       {},
       "FormatError",
       "llama.attention.head_count is 8 (x head_dim 2147483647 = 17179869176 query rows), but "
       "tensor 'blk.0.attn_q.weight' has shape [256, 256], expected [256, 17179869176]"},
      {"FeedForwardLengthHuge",
       {{"llama.feed_forward_length", u32(2147483647u)}},
       {},
       "FormatError",
       "llama.feed_forward_length is 2147483647, but tensor 'blk.0.ffn_up.weight' has shape "
       "[256, 512], expected [256, 2147483647]"},
      {"ContextLengthBeyondInt32",
       {{"llama.context_length", u64(uint64_t{1} << 40)}},
       {},
       "FormatError",
       "llama.context_length is 1099511627776, " + count_range},
      {"VocabSizeDisagreesWithTensors",
       {{"llama.vocab_size", u32(1u << 22)}},
       {},
       "FormatError",
       "llama.vocab_size is 4194304, but tensor 'token_embd.weight' has 512 rows"},
      {"RopeDimensionHuge",
       {{"llama.rope.dimension_count", u32(2147483647u)}},
       {},
       "FormatError",
       "llama.rope.dimension_count is 2147483647, expected an even count within head_dim 32"},
      {"RmsEpsilonNotFinite",
       {{"llama.attention.layer_norm_rms_epsilon", f32(std::numeric_limits<double>::quiet_NaN())}},
       {},
       "FormatError",
       "llama.attention.layer_norm_rms_epsilon is nan, expected a finite number >= 0"},
      {"ExpertCountIsUnsupported",
       {{"llama.expert_count", u32(8)}},
       {},
       "Unsupported",
       "llama.expert_count is 8: mixture-of-experts models are not supported"},
      {"ExpertCountHuge",
       {{"llama.expert_count", u64(uint64_t{1} << 40)}},
       {},
       "FormatError",
       "llama.expert_count is 1099511627776, expected a count in 0..2147483647"},
      {"ExpertsUsedWithoutExperts",
       {{"llama.expert_used_count", u32(1u << 22)}},
       {},
       "FormatError",
       "llama.expert_used_count is 4194304, but llama.expert_count is 0"},
      moe_case("MoeExpertsUsedAboveExpertCount", {{"qwen3moe.expert_used_count", u32(9)}}, {},
               "FormatError", "qwen3moe.expert_used_count is 9, expected a count in 1..8"),
      moe_case("MoeExpertsUsedZero", {{"qwen3moe.expert_used_count", u32(0)}}, {}, "FormatError",
               "qwen3moe.expert_used_count is 0, expected a count in 1..8"),
      moe_case("MoeExpertCountAboveCap", {{"qwen3moe.expert_count", u32(1u << 20)}}, {},
               "FormatError", "qwen3moe.expert_count is 1048576, expected a count in 1..512"),
      moe_case("MoeExpertCountDisagreesWithTensors", {{"qwen3moe.expert_count", u32(16)}}, {},
               "FormatError",
               "qwen3moe.expert_count is 16 and qwen3moe.expert_feed_forward_length is 128, but "
               "tensor 'blk.0.ffn_up_exps.weight' has shape [256, 128, 8], expected [256, 128, "
               "16]"),
      moe_case("MoeExpertFeedForwardLengthMissing", {}, {}, "FormatError",
               "missing metadata key 'qwen3moe.expert_feed_forward_length'",
               {"qwen3moe.expert_feed_forward_length"}),
      moe_case("MoeDownExpertsTransposed", {}, {{"blk.2.ffn_down_exps.weight", {256, 128, 8}}},
               "FormatError",
               "tensor 'blk.2.ffn_down_exps.weight': shape [256, 128, 8], expected [128, 256, 8]"),
      moe_case("MoeGateExpertsFlattened", {}, {{"blk.1.ffn_gate_exps.weight", {256, 1024}}},
               "FormatError",
               "tensor 'blk.1.ffn_gate_exps.weight': shape [256, 1024], expected [256, 128, 8]"),
      moe_case("MoeRouterWrongShape", {}, {{"blk.3.ffn_gate_inp.weight", {128, 16}}}, "FormatError",
               "tensor 'blk.3.ffn_gate_inp.weight': shape [128, 16], expected [256, 8]"),
      moe_case("MoeUpExpertsMissing", {}, {}, "FormatError",
               "missing tensor 'blk.3.ffn_up_exps.weight'", {}, {"blk.3.ffn_up_exps.weight"}),
  };
}

// Loads `path` and names the outcome: "loaded", "FormatError: ...", "Unsupported: ...".
std::string load_outcome(const std::filesystem::path& path) {
  try {
    const auto model = load_model(path);
    return "loaded";
  } catch (const FormatError& e) {
    return std::string("FormatError: ") + e.what();
  } catch (const Unsupported& e) {
    return std::string("Unsupported: ") + e.what();
  }
}

class HostileMetadata : public ::testing::TestWithParam<HostileCase> {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path make(const HostileCase& c) {
    testing::GgufEdit edit;
    edit.value_overrides = c.metadata;
    edit.drop_tensors = c.drop_tensors;
    edit.reshape = c.reshape;
    edit.drop_keys = c.drop_keys;
    path_ = testing::temp_path("hostile-" + c.label + ".gguf");
    testing::rewrite_gguf(testing::fixtures_dir() / (c.base + ".gguf"), path_, edit);
    return path_;
  }
  std::filesystem::path path_;
};

TEST_P(HostileMetadata, FailsAtLoadNamingFileKeyAndExpectationInBoundedMemory) {
  const HostileCase& c = GetParam();
  const auto path = make(c);
  const auto outcome = testing::run_with_memory_cap(kHeadroom, [&] { return load_outcome(path); });
  ASSERT_TRUE(outcome.finished) << outcome.text;
  EXPECT_EQ(outcome.text, c.kind + ": " + path.string() + ": " + c.expected);
}

INSTANTIATE_TEST_SUITE_P(Counts, HostileMetadata, ::testing::ValuesIn(hostile_cases()),
                         [](const auto& info) { return info.param.label; });

// tiny-qwen35 (FIXTURES-more-archs.md F) with one edit: the Gated DeltaNet keys and tensors are
// checked before the recurrent state is sized by them.
struct HostileQwen35Case {
  std::string label;
  testing::GgufEdit edit;
  std::string expected;  // after "FormatError: <file>: "
};

void PrintTo(const HostileQwen35Case& c, std::ostream* os) {
  *os << c.label;
}

std::vector<HostileQwen35Case> hostile_qwen35_cases() {
  auto drop_key = [](const std::string& key) {
    testing::GgufEdit e;
    e.drop_keys = {key};
    return e;
  };
  auto set = [](const std::string& key, const Value& v) {
    testing::GgufEdit e;
    e.value_overrides = {{key, v}};
    return e;
  };
  auto reshape = [](const std::string& tensor, std::vector<int64_t> ne) {
    testing::GgufEdit e;
    e.reshape = {{tensor, ne}};
    return e;
  };
  return {
      {"MissingStateSize", drop_key("qwen35.ssm.state_size"),
       "missing metadata key 'qwen35.ssm.state_size'"},
      {"MissingConvKernel", drop_key("qwen35.ssm.conv_kernel"),
       "missing metadata key 'qwen35.ssm.conv_kernel'"},
      {"MissingInnerSize", drop_key("qwen35.ssm.inner_size"),
       "missing metadata key 'qwen35.ssm.inner_size'"},
      {"MissingRopeSections", drop_key("qwen35.rope.dimension_sections"),
       "missing metadata key 'qwen35.rope.dimension_sections'"},
      {"StateSizeHuge", set("qwen35.ssm.state_size", u32(2147483647u)),
       "qwen35.ssm.state_size is 2147483647, expected 1..4096"},
      {"InnerSizeNotAMultipleOfHeads", set("qwen35.ssm.inner_size", u32(130)),
       "qwen35.ssm.inner_size 130 is not a multiple of qwen35.ssm.time_step_rank 4"},
      {"StateSizeDisagreesWithTensors", set("qwen35.ssm.state_size", u32(16)),
       "tensor 'blk.0.attn_qkv.weight': shape [256, 256], expected [256, 192]"},
      {"ConvKernelDisagreesWithTensors", set("qwen35.ssm.conv_kernel", u32(8)),
       "tensor 'blk.0.ssm_conv1d.weight': shape [4, 256], expected [8, 256]"},
      {"ConvTensorReshaped", reshape("blk.1.ssm_conv1d.weight", {8, 128}),
       "tensor 'blk.1.ssm_conv1d.weight': shape [8, 128], expected [4, 256]"},
      {"OutTensorReshaped", reshape("blk.2.ssm_out.weight", {256, 128}),
       "tensor 'blk.2.ssm_out.weight': shape [256, 128], expected [128, 256]"},
      {"GatedQueryTooSmall", reshape("blk.3.attn_q.weight", {512, 256}),
       "qwen35.attention.head_count is 4 (x head_dim 64 = 512 query rows), but tensor "
       "'blk.3.attn_q.weight' has shape [512, 256], expected [256, 512]"},
  };
}

class HostileQwen35 : public ::testing::TestWithParam<HostileQwen35Case> {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_P(HostileQwen35, FailsAtLoadNamingKeyOrTensor) {
  const HostileQwen35Case& c = GetParam();
  path_ = testing::temp_path("hostile-qwen35-" + c.label + ".gguf");
  testing::rewrite_gguf(testing::fixtures_dir() / "tiny-qwen35.gguf", path_, c.edit);
  const auto outcome = testing::run_with_memory_cap(kHeadroom, [&] { return load_outcome(path_); });
  ASSERT_TRUE(outcome.finished) << outcome.text;
  EXPECT_EQ(outcome.text, "FormatError: " + path_.string() + ": " + c.expected);
}

INSTANTIATE_TEST_SUITE_P(Qwen35, HostileQwen35, ::testing::ValuesIn(hostile_qwen35_cases()),
                         [](const auto& info) { return info.param.label; });

TEST(HostileQwen35Cap, TheUneditedModelLoads) {
  const auto outcome = testing::run_with_memory_cap(
      kHeadroom, [] { return load_outcome(testing::fixtures_dir() / "tiny-qwen35.gguf"); });
  ASSERT_TRUE(outcome.finished);
  EXPECT_EQ(outcome.text, "loaded");
}

TEST(HostileMetadataCap, TheUneditedModelsLoadUnderTheSameCap) {
  for (const char* base : {"tiny-llama.gguf", "tiny-qwen3moe.gguf"}) {
    const auto outcome = testing::run_with_memory_cap(
        kHeadroom, [&] { return load_outcome(testing::fixtures_dir() / base); });
    ASSERT_TRUE(outcome.finished) << base;
    EXPECT_EQ(outcome.text, "loaded") << base;
  }
}

TEST(HostileMetadataCap, AnAllocationPastTheCapFails) {
  if (!testing::kMemoryCapWorks) GTEST_SKIP() << "no address-space cap under a sanitizer";
  const auto outcome = testing::run_with_memory_cap(kHeadroom, [] {
    std::vector<char> big(size_t{1} << 30, 1);
    return std::to_string(big[12345]);
  });
  ASSERT_TRUE(outcome.finished);
  EXPECT_EQ(outcome.text, "std::bad_alloc");
}

}  // namespace
}  // namespace augur::model
