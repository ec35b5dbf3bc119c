// Logits with each K/V cache type against llama.cpp's F32-KV reference (tiny-llama, F32 weights:
// augur's F32 cache meets it at logits_atol, so what moves is the cache alone), over every prompt
// row and teacher-forced greedy row (329 rows, logit std 30).
//   f16: within the largest deviation llama.cpp's own default context (F16 KV) shows on this
//        fixture (noise_floor.max.f16kv_default_all, 0.133; FIXTURES.md section 7). Measured
//        2026-12-04: 0.0895, argmax 329/329 (prompt 0's single row: 0.0222, llama.cpp's exactly).
//        Per prompt it is not always within llama.cpp's figure: that was taken with flash
//        attention on (F16 V accumulation), a different order.
//   q8_0 / q4_0: no llama.cpp reference exists. Measured 2026-12-04: q8_0 max 2.62, argmax
//        325/329; q4_0 max 32.3, argmax 245/329 (this random-weight fixture's attention is sharp,
//        so a 4-bit key moves scores by whole units). Bounds: 1.5x the max, and an argmax share a
//        few rows below what was measured.
// Plus batch invariance with quantized rows: one batch equals the same tokens one row at a time,
// bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "support/model_session.h"
#include "support/reference.h"
#include "test_paths.h"

namespace augur {
namespace {

using testing::ModelSession;

struct Bound {
  std::string type;
  double max_abs;           // |dlogit| bound; < 0: the fixture's largest f16kv_default_all
  double argmax_agreement;  // least share of rows with the reference's argmax
};

struct Measured {
  double max_abs = 0, prompt_max_abs = 0;
  int rows = 0, argmax_same = 0;
};

class KvCacheTypes : public ::testing::TestWithParam<Bound> {};

TEST_P(KvCacheTypes, LogitsNearTheF32Reference) {
  const Bound bound = GetParam();
  const auto dir = testing::fixtures_dir();
  const auto ref = testing::read_json(dir / "tiny-llama.ref.json");
  const auto want = testing::read_f32(dir / ref["logits_file"]["name"].get<std::string>());
  const auto want_greedy =
      testing::read_f32(dir / ref["greedy_logits_file"]["name"].get<std::string>());
  const auto n_vocab = ref["n_vocab"].get<int64_t>();
  const gguf::TensorType type = cache::parse_cache_type(bound.type);
  ModelSession s(dir / ref["gguf"].get<std::string>(), 512, 512, 2, {type, type});
  Measured all;
  for (size_t p = 0; p < ref["prompts"].size(); ++p) {
    Measured m;
    const auto check = [&](const float* got, const float* expect, bool prompt_row) {
      const double d = testing::max_abs_diff(got, expect, n_vocab);
      m.max_abs = std::max(m.max_abs, d);
      if (prompt_row) m.prompt_max_abs = std::max(m.prompt_max_abs, d);
      m.argmax_same += ModelSession::argmax(got, n_vocab) == ModelSession::argmax(expect, n_vocab);
      ++m.rows;
    };
    s.cache.clear();
    const auto prompt = ref["prompts"][p].get<std::vector<int32_t>>();
    const auto got = s.all_logits(prompt);
    const auto offset = ref["logits_file"]["row_offsets"][p].get<size_t>();
    for (size_t i = 0; i < prompt.size(); ++i) {
      check(got.data() + i * n_vocab, want.data() + (offset + i) * n_vocab, true);
    }
    // Teacher-forced greedy rows: the reference's tokens, one row at a time.
    const auto tokens = ref["greedy"][p]["tokens"].get<std::vector<int32_t>>();
    for (size_t k = 1; k < tokens.size(); ++k) {
      const auto row = s.last_logits({tokens[k - 1]});
      check(row.data(), want_greedy.data() + (p * tokens.size() + k) * n_vocab, false);
    }
    const double limit = bound.max_abs >= 0
                             ? bound.max_abs
                             : ref["noise_floor"]["max"]["f16kv_default_all"].get<double>();
    EXPECT_LE(m.max_abs, limit) << bound.type << " prompt " << p;
    std::printf("%s prompt %zu: prompt rows %.3g, all rows %.3g, llama.cpp f16 kv %.3g\n",
                bound.type.c_str(), p, m.prompt_max_abs, m.max_abs,
                ref["noise_floor"]["per_prompt"][p]["f16kv_default_all"].get<double>());
    all.max_abs = std::max(all.max_abs, m.max_abs);
    all.rows += m.rows;
    all.argmax_same += m.argmax_same;
  }
  std::printf("%s: max |dlogit| %.3g, argmax %d/%d\n", bound.type.c_str(), all.max_abs,
              all.argmax_same, all.rows);
  EXPECT_GE(all.argmax_same, bound.argmax_agreement * all.rows) << bound.type;
  // The cache really holds rows of that type (not F32 rows under another name).
  EXPECT_EQ(s.cache.key_bytes(0, 0, 0).size(), gguf::row_bytes(type, s.model->hparams().head_dim));
}

INSTANTIATE_TEST_SUITE_P(Types, KvCacheTypes,
                         ::testing::Values(Bound{"f32", 1e-3, 1.0}, Bound{"f16", -1, 1.0},
                                           Bound{"q8_0", 4.0, 0.97}, Bound{"q4_0", 48.0, 0.7}),
                         [](const auto& info) { return info.param.type; });

// One batch of 40 rows equals the same rows fed one at a time, bit for bit, for quantized K/V:
// each row's scores depend on its own query and keys only.
TEST(KvCacheTypesBatchInvariance, OneBatchEqualsRowByRow) {
  const auto dir = testing::fixtures_dir();
  const auto ref = testing::read_json(dir / "tiny-llama.ref.json");
  const auto prompt = ref["prompts"][3].get<std::vector<int32_t>>();
  for (const char* name : {"f16", "q8_0", "q4_0"}) {
    const gguf::TensorType type = cache::parse_cache_type(name);
    ModelSession batch(dir / ref["gguf"].get<std::string>(), 512, 512, 2, {type, type});
    ModelSession single(dir / ref["gguf"].get<std::string>(), 512, 512, 2, {type, type});
    const std::vector<int32_t> tokens(prompt.begin(), prompt.begin() + 40);
    const auto together = batch.all_logits(tokens);
    const int64_t n_vocab = batch.n_vocab();
    for (size_t i = 0; i < tokens.size(); ++i) {
      const auto alone = single.last_logits({tokens[i]});
      ASSERT_EQ(0,
                std::memcmp(alone.data(), together.data() + i * n_vocab, sizeof(float) * n_vocab))
          << name << " row " << i;
    }
  }
}

}  // namespace
}  // namespace augur
