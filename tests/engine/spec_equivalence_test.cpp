// Token-stream equivalence: greedy speculative decoding gives exactly AR's greedy tokens, for
// every fixture (gemma3's sliding-window ring included) and for zoo-target with each drafter
// (n-gram, layer-skip, a separate draft model: zoo-draft for zoo-target, one fixture for another;
// and the auto policy, which varies the source and k from cycle to cycle), k in {1, 2, 4, 8, 16},
// over 256 generated tokens, with a small ubatch so the prompt and the k+1-row verifies cross
// ubatch boundaries. Quantized K/V caches (q8_0, q4_0; the drafters' caches too) keep the
// equality: rows are quantized when written and every row's attention depends only on its own
// rows, so a verify row sees exactly what the AR step saw (k in {1, 4, 8}). The drafter must
// really have run (drafted > 0), or the comparison would prove nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "spec/vocab_match.h"
#include "support/requested_isa.h"
#include "support/sanitized_build.h"
#include "support/spec_setup.h"

namespace augur::engine {
namespace {

using testing::kNeverEog;

constexpr int kGenerated = 256;
constexpr int kDraftLengths[] = {1, 2, 4, 8, 16};
// The portable kernel path (AUGUR_ISA=scalar, CMakeLists.txt) runs 6-15x slower than AVX2
// (measured: 667 s for the three zoo cases against 67 s; 527 s for the fixtures), so there the
// runs are trimmed to k in {1, 4, 16} (drafts shorter than, equal to and longer than the ubatch)
// and 128 generated tokens for a fixture (gemma3's window of 16 still wraps eight times), 64 for
// a zoo model (still past ubatch boundaries). CTest runs only the fixtures there. A sanitized
// build (several times slower) runs the same trimmed sizes on every path.
constexpr int kGeneratedPortableFixture = 128;
constexpr int kGeneratedPortableZoo = 64;
constexpr int kDraftLengthsPortable[] = {1, 4, 16};

struct Case {
  std::string name;
  std::string target;  // path below shared/
  std::vector<std::string> drafters;
  int64_t ubatch = 8;
  float repeat_penalty = 1.0f;
  std::string cache_type = "f32";  // K and V cache type of the target and the drafters
  std::vector<int> draft_lengths;  // empty: kDraftLengths
};

// A prompt longer than the ubatch: the fixtures' third prompt, or two zoo prompts joined.
std::vector<int32_t> long_prompt(const Case& c, const model::Model& m) {
  if (c.target.rfind("fixtures/", 0) == 0) {
    auto ref = testing::read_json(testing::shared_dir() /
                                  (c.target.substr(0, c.target.size() - 5) + ".ref.json"));
    return ref["prompts"][2].get<std::vector<int32_t>>();
  }
  auto prompts = testing::zoo_prompts(m, 2);
  std::vector<int32_t> joined = prompts[0];
  joined.insert(joined.end(), prompts[1].begin() + 1, prompts[1].end());  // without its BOS
  return joined;
}

class SpecEquivalence : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE(); }
};

TEST_P(SpecEquivalence, GreedySpeculativeTokensEqualArTokens) {
  const Case& c = GetParam();
  auto target = model::load_model(testing::shared_dir() / c.target);
  kernels::ThreadPool pool(2);
  const auto prompt = long_prompt(c, *target);
  ASSERT_GT(static_cast<int64_t>(prompt.size()), c.ubatch);
  const bool trimmed = kernels::current_isa() == kernels::Isa::kScalar || testing::kSanitizedBuild;
  const bool zoo = c.target.rfind("models/", 0) == 0;
  const int generated = !trimmed ? kGenerated
                        : zoo    ? kGeneratedPortableZoo
                                 : kGeneratedPortableFixture;
  const std::span<const int> draft_lengths = !c.draft_lengths.empty()
                                                 ? std::span<const int>(c.draft_lengths)
                                             : trimmed ? std::span<const int>(kDraftLengthsPortable)
                                                       : std::span<const int>(kDraftLengths);
  const gguf::TensorType cache_type = cache::parse_cache_type(c.cache_type);
  const cache::CacheTypes types{cache_type, cache_type};
  const int64_t n_ctx = static_cast<int64_t>(prompt.size()) + generated + 32;
  const auto sampler = testing::make_sampler(*target, 0.0f, c.repeat_penalty);
  GenerateOptions opt;
  opt.n_predict = generated;
  opt.ignore_eos = true;

  Generator ar_gen(*target, pool, n_ctx, c.ubatch, types);
  sampling::SeededRng rng(1);
  const auto ar = ar_gen.generate(prompt, sampler, rng, opt, kNeverEog).tokens;
  ASSERT_EQ(static_cast<int>(ar.size()), generated);

  for (const auto& kind : c.drafters) {
    // One generator and drafter for every k: later runs also exercise prefix reuse.
    Generator gen(*target, pool, n_ctx, c.ubatch, types);
    ASSERT_EQ(gen.cache().type_k(), cache_type);
    auto holder = testing::make_test_drafter(kind, *target, pool, n_ctx, c.ubatch, types);
    if (holder.model_drafter) {
      ASSERT_EQ(holder.model_drafter->cache().type_v(), cache_type);
    }
    if (holder.draft_model) {
      // What the CLI checks before it lets a draft model draft (spec/vocab_match.h).
      EXPECT_NO_THROW(spec::check_same_vocabulary(*target, *holder.draft_model)) << kind;
    }
    const bool is_auto = kind.rfind("auto", 0) == 0;
    int64_t auto_drafted = 0;
    for (int k : draft_lengths) {
      GenerateOptions spec_opt = opt;
      spec_opt.drafter = holder.drafter.get();
      spec_opt.draft_max = k;
      const auto r = gen.generate(prompt, sampler, rng, spec_opt, kNeverEog);
      const auto& st = r.stats.spec;
      size_t first_diff = 0;
      while (first_diff < ar.size() && first_diff < r.tokens.size() &&
             ar[first_diff] == r.tokens[first_diff])
        ++first_diff;
      EXPECT_EQ(r.tokens, ar) << c.name << " " << kind << " k=" << k << ": first difference at "
                              << first_diff;
      // The auto policy may rightly stop drafting where nothing pays (it falls back to AR): it
      // must have drafted over the runs of all k, each fixed drafter in every run.
      if (!is_auto) {
        EXPECT_GT(st.drafted, 0) << c.name << " " << kind << " k=" << k
                                 << ": the drafter never ran";
      }
      auto_drafted += st.drafted;
      const auto colon = kind.find(':');
      const std::string label =
          kind.find("model:") != std::string::npos || kind.find("eagle3:/") != std::string::npos ||
                  kind.find("dflash:/") != std::string::npos
              ? kind.substr(0, colon + 1) +
                    std::filesystem::path(kind.substr(colon + 1)).filename().string()
              : kind;
      std::printf(
          "[ spec     ] %-16s %-24s k=%-2d cycles %3lld drafted %4lld accepted %4lld tau %.2f\n",
          c.name.c_str(), label.c_str(), k, static_cast<long long>(st.cycles),
          static_cast<long long>(st.drafted), static_cast<long long>(st.accepted), st.tau());
    }
    EXPECT_GT(auto_drafted, 0) << c.name << " " << kind << ": the drafter never ran";
  }
}

const std::string kZooDraft = (testing::models_dir() / "zoo-draft-f16.gguf").string();
// Trained by tools/train_drafter (models/DRAFTERS.md); committed with the source.
const std::string kZooEagle3 =
    (testing::source_dir() / "models" / "zoo-target-eagle3-f16.gguf").string();
// The same head quantized by `augur quantize` (Q8_0 matrices): what the drafter reports run.
const std::string kZooEagle3Q8 =
    (testing::source_dir() / "models" / "zoo-target-eagle3-q8_0.gguf").string();
const std::string kZooDFlash =
    (testing::source_dir() / "models" / "zoo-target-dflash-f16.gguf").string();
// The fixtures share one 512-token vocabulary (FIXTURES.md), so any of them can draft for another.
std::string fixture_draft(const std::string& name) {
  return "model:" + (testing::fixtures_dir() / (name + ".gguf")).string();
}

INSTANTIATE_TEST_SUITE_P(
    Models, SpecEquivalence,
    ::testing::Values(
        Case{"tiny_llama", "fixtures/tiny-llama.gguf", {"ngram", "layerskip:1", "auto"}},
        Case{"tiny_llama_BF16", "fixtures/tiny-llama-BF16.gguf", {"ngram", "layerskip:1", "auto"}},
        Case{"tiny_llama_Q8_0", "fixtures/tiny-llama-Q8_0.gguf", {"ngram", "layerskip:1", "auto"}},
        Case{"tiny_llama_Q4_0", "fixtures/tiny-llama-Q4_0.gguf", {"ngram", "layerskip:1", "auto"}},
        Case{"tiny_qwen2", "fixtures/tiny-qwen2.gguf", {"ngram", "layerskip:1", "auto"}},
        Case{"tiny_qwen3", "fixtures/tiny-qwen3.gguf", {"ngram", "layerskip:1", "auto"}},
        // Sliding-window layers (window 16): 256 tokens wrap the ring many times over.
        Case{"tiny_gemma3",
             "fixtures/tiny-gemma3.gguf",
             {"ngram", "layerskip:2", "auto", fixture_draft("tiny-qwen3")}},
        // Mixture of experts: a verify routes its k+1 rows together, each as it would alone.
        Case{"tiny_qwen3moe",
             "fixtures/tiny-qwen3moe.gguf",
             {"ngram", "layerskip:1", "auto", fixture_draft("tiny-qwen3")}},
        // Hybrid: the verify's recurrent states are rolled back to the accepted row; the
        // layer-skip drafter runs one Gated DeltaNet layer.
        Case{"tiny_qwen35",
             "fixtures/tiny-qwen35.gguf",
             {"ngram", "layerskip:1", "layerskip:2", "auto", fixture_draft("tiny-qwen3")}},
        // A separate draft model (spec::ModelDrafter) on the fixtures: the same weights in another
        // type (Q4_0 for F32 keeps about half the drafts, F32 for Q8_0 most of them, with a
        // penalty) and another architecture with other weights (keeps none: every cycle ends in
        // a correction).
        Case{"tiny_llama_draft_model",
             "fixtures/tiny-llama.gguf",
             {fixture_draft("tiny-llama-Q4_0")}},
        // The MoE fixture drafting for itself: every draft is accepted, so each verified row of
        // a k+1-row batch must be bitwise the AR row (routing included).
        Case{"tiny_qwen3moe_self_draft",
             "fixtures/tiny-qwen3moe.gguf",
             {fixture_draft("tiny-qwen3moe")}},
        Case{"tiny_qwen2_draft_model",
             "fixtures/tiny-qwen2.gguf",
             {fixture_draft("tiny-llama-BF16")}},
        Case{"tiny_llama_Q8_0_draft_model_penalty",
             "fixtures/tiny-llama-Q8_0.gguf",
             {fixture_draft("tiny-llama")},
             8,
             1.3f},
        Case{"zoo_target_f16",
             "models/zoo-target-f16.gguf",
             {"model:" + kZooDraft, "ngram", "layerskip:4", "auto+model:" + kZooDraft},
             16},
        Case{"zoo_target_q8_0", "models/zoo-target-q8_0.gguf", {"model:" + kZooDraft}, 16},
        // History-dependent penalty: p and q rows follow the draft prefix.
        Case{"zoo_q8_0_penalty",
             "models/zoo-target-q8_0.gguf",
             {"model:" + kZooDraft, "ngram", "auto+model:" + kZooDraft},
             16,
             1.3f},
        // Quantized K/V caches.
        Case{"tiny_llama_kv_q4_0",
             "fixtures/tiny-llama.gguf",
             {"ngram", "layerskip:1"},
             8,
             1.0f,
             "q4_0",
             {1, 4, 8}},
        Case{"zoo_q8_0_kv_q8_0",
             "models/zoo-target-q8_0.gguf",
             {"model:" + kZooDraft, "ngram"},
             16,
             1.0f,
             "q8_0",
             {1, 4, 8}},
        Case{"zoo_q8_0_kv_q4_0",
             "models/zoo-target-q8_0.gguf",
             {"model:" + kZooDraft, "ngram", "layerskip:4"},
             16,
             1.0f,
             "q4_0",
             {1, 4, 8}},
        // EAGLE-3 heads read the target's hidden states, captured in the prefill and verify
        // forwards: the echo head (tests/support/eagle3_heads.h) on a fixture and on zoo-target
        // (alone and in the auto policy), and the trained head for zoo-target (models/).
        Case{"tiny_qwen3_eagle3",
             "fixtures/tiny-qwen3.gguf",
             {"eagle3:echo", "auto+eagle3:echo"},
             8,
             1.0f,
             "f32",
             {1, 4, 8}},
        Case{"zoo_target_f16_eagle3",
             "models/zoo-target-f16.gguf",
             {"eagle3:echo", "eagle3:" + kZooEagle3, "auto+eagle3:" + kZooEagle3},
             16,
             1.0f,
             "f32",
             {1, 4, 8}},
        Case{"zoo_q8_0_eagle3_penalty_kv_q8_0",
             "models/zoo-target-q8_0.gguf",
             {"eagle3:" + kZooEagle3, "eagle3:" + kZooEagle3Q8},
             16,
             1.3f,
             "q8_0",
             {1, 4, 8}},
        // DFlash drafters inject the captured features into their cache and draft a whole
        // block per forward: a random one (tests/support/dflash_heads.h) on a fixture (alone and
        // in the auto policy) and the trained one for zoo-target (models/), also with a penalty
        // and a quantized cache.
        Case{"tiny_qwen3_dflash",
             "fixtures/tiny-qwen3.gguf",
             {"dflash:random", "auto+dflash:random"},
             8,
             1.0f,
             "f32",
             {1, 4, 8}},
        Case{"zoo_target_f16_dflash",
             "models/zoo-target-f16.gguf",
             {"dflash:random", "dflash:" + kZooDFlash, "auto+dflash:" + kZooDFlash},
             16,
             1.0f,
             "f32",
             {1, 4, 8}},
        Case{"zoo_q8_0_dflash_penalty_kv_q8_0",
             "models/zoo-target-q8_0.gguf",
             {"dflash:" + kZooDFlash},
             16,
             1.3f,
             "q8_0",
             {1, 4, 8}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace augur::engine
