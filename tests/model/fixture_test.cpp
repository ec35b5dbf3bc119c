// Every fixture in shared/fixtures against llama.cpp's reference logits (FIXTURES.md §8):
// prompt rows, teacher-forced decode rows, free-running greedy, and batch-schedule invariance.
// augur computes F32/F16/BF16 weights in F32, so those fixtures are held tightly to their
// `.upcast.` references and loosely (logits_atol_f32_engine) to the main ones. Q8_0/Q4_0 weights
// run llama.cpp's integer products on Q8_0 activations (kernels/quantize_activations.h), so those
// fixtures are held to the main references at logits_atol.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "kernels/quantize_activations.h"
#include "support/model_session.h"
#include "support/reference.h"
#include "support/requested_isa.h"
#include "test_paths.h"

namespace augur {
namespace {

using testing::ModelSession;

struct Fixture {
  std::string name;
  nlohmann::json ref;
  bool upcast = false;            // compare against the .upcast. references
  bool llama_arithmetic = false;  // Q8_0/Q4_0: llama.cpp's integer products on Q8_0 activations
  float atol = 0;                 // tolerance against the chosen reference
  float schedule_atol = 0;        // tolerance between batch schedules of augur itself
  std::vector<float> logits, greedy_logits;  // chosen reference [rows, n_vocab]
  nlohmann::json greedy;                     // chosen reference greedy tokens + margins per prompt
  int64_t n_vocab = 0;

  explicit Fixture(const std::string& fixture_name) : name(fixture_name) {
    const auto dir = testing::fixtures_dir();
    ref = testing::read_json(dir / (name + ".ref.json"));
    n_vocab = ref["n_vocab"].get<int64_t>();
    const auto file = gguf::File::open(gguf());
    llama_arithmetic = kernels::uses_q8_activations(file->tensor("blk.0.attn_q.weight").type);
    upcast = ref.contains("f32_upcast_comparison") && !llama_arithmetic;
    if (upcast) {
      const auto& up = ref["f32_upcast_comparison"]["upcast_reference"];
      logits = testing::read_f32(dir / up["logits_file"].get<std::string>());
      greedy_logits = testing::read_f32(dir / up["greedy_logits_file"].get<std::string>());
      greedy = up["greedy"];
      atol = ref["recommended_tolerance"]["upcast_logits_atol"].get<float>();
    } else {
      logits = testing::read_f32(dir / ref["logits_file"]["name"].get<std::string>());
      greedy_logits = testing::read_f32(dir / ref["greedy_logits_file"]["name"].get<std::string>());
      greedy = ref["greedy"];
      atol = ref["recommended_tolerance"]["logits_atol"].get<float>();
      // Rare rows differ after a flipped activation rounding (see the test at the end), so the
      // per-row bound is the documented one for an engine that is not llama.cpp bit for bit.
      if (llama_arithmetic) {
        schedule_atol = atol;
        atol = ref["recommended_tolerance"]["logits_atol_f32_engine"].get<float>();
        return;
      }
    }
    schedule_atol = atol;
  }
  std::filesystem::path gguf() const {
    return testing::fixtures_dir() / ref["gguf"].get<std::string>();
  }
  size_t n_prompts() const { return ref["prompts"].size(); }
  std::vector<int32_t> prompt(size_t p) const {
    return ref["prompts"][p].get<std::vector<int32_t>>();
  }
  const float* prompt_row(size_t p, size_t i) const {
    return logits.data() + (ref["logits_file"]["row_offsets"][p].get<size_t>() + i) * n_vocab;
  }
  size_t n_greedy() const { return greedy[0]["tokens"].size(); }
  const float* greedy_row(size_t p, size_t k) const {
    return greedy_logits.data() + (p * n_greedy() + k) * n_vocab;
  }
};

class FixtureTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE(); }
};

TEST_P(FixtureTest, PromptLogitsMatchReferenceInOneBatch) {
  Fixture fx(GetParam());
  for (size_t p = 0; p < fx.n_prompts(); ++p) {
    ModelSession s(fx.gguf());
    const auto prompt = fx.prompt(p);
    const auto logits = s.all_logits(prompt);
    float worst = 0;
    for (size_t i = 0; i < prompt.size(); ++i) {
      worst = std::max(
          worst, testing::max_abs_diff(&logits[i * fx.n_vocab], fx.prompt_row(p, i), fx.n_vocab));
    }
    EXPECT_LE(worst, fx.atol) << fx.name << " prompt " << p << " (upcast ref: " << fx.upcast << ")";
    RecordProperty("prompt" + std::to_string(p) + "_max_abs", std::to_string(worst));
  }
}

TEST_P(FixtureTest, TeacherForcedDecodeRowsMatchReference) {
  Fixture fx(GetParam());
  for (size_t p = 0; p < fx.n_prompts(); ++p) {
    ModelSession s(fx.gguf());
    const auto tokens = fx.greedy[p]["tokens"].get<std::vector<int32_t>>();
    auto logits = s.last_logits(fx.prompt(p));
    float worst = testing::max_abs_diff(logits.data(), fx.greedy_row(p, 0), fx.n_vocab);
    for (size_t k = 1; k < fx.n_greedy(); ++k) {
      logits = s.last_logits({tokens[k - 1]});
      worst =
          std::max(worst, testing::max_abs_diff(logits.data(), fx.greedy_row(p, k), fx.n_vocab));
    }
    EXPECT_LE(worst, fx.atol) << fx.name << " prompt " << p;
  }
}

TEST_P(FixtureTest, FreeRunningGreedyMatchesUpToFirstNearTie) {
  Fixture fx(GetParam());
  for (size_t p = 0; p < fx.n_prompts(); ++p) {
    ModelSession s(fx.gguf());
    const auto expected = fx.greedy[p]["tokens"].get<std::vector<int32_t>>();
    const auto margins = fx.greedy[p]["margins"].get<std::vector<float>>();
    const auto got = s.greedy(fx.prompt(p), static_cast<int>(expected.size()));
    size_t must_match = expected.size();
    for (size_t k = 0; k < margins.size(); ++k) {
      if (margins[k] < 2 * fx.atol) {
        must_match = k + 1;
        break;
      }
    }
    size_t matched = 0;
    while (matched < expected.size() && got[matched] == expected[matched]) ++matched;
    EXPECT_GE(matched, must_match)
        << fx.name << " prompt " << p << ": diverged at step " << matched;
  }
}

// Fixtures computed in F32 from non-F32 weights: the main (llama.cpp-numerics) reference within
// logits_atol_f32_engine, and the same argmax wherever the reference's own margin exceeds it.
TEST_P(FixtureTest, MainReferenceWithinF32EngineBound) {
  Fixture fx(GetParam());
  if (!fx.upcast) return;  // covered at logits_atol by the tests above
  const float bound = fx.ref["recommended_tolerance"]["logits_atol_f32_engine"].get<float>();
  const auto main =
      testing::read_f32(testing::fixtures_dir() / fx.ref["logits_file"]["name"].get<std::string>());
  for (size_t p = 0; p < fx.n_prompts(); ++p) {
    ModelSession s(fx.gguf());
    const auto prompt = fx.prompt(p);
    const auto logits = s.all_logits(prompt);
    for (size_t i = 0; i < prompt.size(); ++i) {
      const float* want =
          main.data() + (fx.ref["logits_file"]["row_offsets"][p].get<size_t>() + i) * fx.n_vocab;
      const float* got = &logits[i * fx.n_vocab];
      EXPECT_LE(testing::max_abs_diff(got, want, fx.n_vocab), bound)
          << fx.name << " p" << p << " row " << i;
      std::vector<float> sorted(want, want + fx.n_vocab);
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      if (sorted[0] - sorted[1] > bound) {
        EXPECT_EQ(ModelSession::argmax(got, fx.n_vocab), ModelSession::argmax(want, fx.n_vocab))
            << fx.name << " p" << p << " row " << i;
      }
    }
  }
}

// Q8_0/Q4_0 weights: augur runs the same integer products on the same Q8_0 activations as
// llama.cpp (bit for bit, kernels/quantize_activations.h) and attention in llama.cpp's batch
// order, so many rows equal llama.cpp's to its own noise floor (logits_atol). A row departs
// after a ulp-level difference (e.g. llama.cpp's other summation order for single tokens) flips
// one activation's rounding; the flip then reaches later rows through the KV cache. With F32
// activations instead, no row comes within 1e-3 (FIXTURES.md section 7: upcast vs quantized
// differ by up to 3). Measured 2026-12-03 (AVX2 path), prompt / decode rows within 1e-3:
// Q8_0 141/141 and 182/188, Q4_0 140/141 and 149/188.
TEST_P(FixtureTest, QuantizedWeightsReproduceLlamaCppOnManyRows) {
  Fixture fx(GetParam());
  if (!fx.llama_arithmetic) return;
  size_t rows = 0, exact = 0, decode_rows = 0, decode_exact = 0;
  for (size_t p = 0; p < fx.n_prompts(); ++p) {
    const auto prompt = fx.prompt(p);
    ModelSession batch(fx.gguf());
    const auto logits = batch.all_logits(prompt);
    for (size_t i = 0; i < prompt.size(); ++i, ++rows) {
      exact += testing::max_abs_diff(&logits[i * fx.n_vocab], fx.prompt_row(p, i), fx.n_vocab) <=
               fx.schedule_atol;
    }
    ModelSession s(fx.gguf());
    const auto tokens = fx.greedy[p]["tokens"].get<std::vector<int32_t>>();
    s.last_logits(prompt);
    for (size_t k = 1; k < fx.n_greedy(); ++k, ++decode_rows) {
      const auto row = s.last_logits({tokens[k - 1]});
      decode_exact +=
          testing::max_abs_diff(row.data(), fx.greedy_row(p, k), fx.n_vocab) <= fx.schedule_atol;
    }
  }
  std::printf("[fixture] %s: rows within %g of llama.cpp: prompt %zu/%zu, decode %zu/%zu\n",
              fx.name.c_str(), fx.schedule_atol, exact, rows, decode_exact, decode_rows);
  // A quarter, not "most": where the first flip lands is chaotic, and a flip early in a prompt
  // takes the rest of it along (the portable path measured Q8_0 decode 122/188).
  EXPECT_GE(4 * exact, rows) << fx.name;
  EXPECT_GE(4 * decode_exact, decode_rows) << fx.name;
}

// One batch, ubatches of 16, and token by token: identical greedy tokens, logits within atol.
TEST_P(FixtureTest, BatchScheduleDoesNotChangeResults) {
  Fixture fx(GetParam());
  const size_t p = fx.n_prompts() - 1;  // the longest prompt (100 tokens) crosses ubatch boundaries
  const auto prompt = fx.prompt(p);
  ModelSession whole(fx.gguf(), 512);
  const auto base_logits = whole.all_logits(prompt);
  const auto base_greedy = whole.greedy(prompt, 48);
  for (int64_t ubatch : {16, 1}) {
    ModelSession s(fx.gguf(), ubatch);
    const auto logits = s.all_logits(prompt);
    ASSERT_EQ(logits.size(), base_logits.size());
    EXPECT_LE(testing::max_abs_diff(logits.data(), base_logits.data(), logits.size()),
              fx.schedule_atol)
        << fx.name << " ubatch " << ubatch;
    EXPECT_EQ(s.greedy(prompt, 48), base_greedy) << fx.name << " ubatch " << ubatch;
  }
  // Token by token through separate forward calls, committing after each.
  ModelSession single(fx.gguf(), 512);
  std::vector<float> logits;
  for (int32_t token : prompt) {
    const auto row = single.all_logits({token});
    logits.insert(logits.end(), row.begin(), row.end());
  }
  EXPECT_LE(testing::max_abs_diff(logits.data(), base_logits.data(), logits.size()),
            fx.schedule_atol);
}

INSTANTIATE_TEST_SUITE_P(AllFixtures, FixtureTest,
                         ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3",
                                           "tiny-llama-Q8_0", "tiny-llama-Q4_0", "tiny-llama-BF16"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace augur
