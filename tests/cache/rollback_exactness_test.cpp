// Rollback is exact on every cache kind: speculative cycles (verify [carry, d1..dk] in one
// forward, keep the accepted prefix) driven straight on a cache, with drafts taken from the AR
// continuation and one of them spoiled at a position that moves from cycle to cycle, so every
// keep from 1 to k+1 occurs. After every cycle the whole cache — each K/V row a later row can
// see (ring slots included, in their quantized form for q8_0/q4_0 caches) and each recurrent
// state — must equal, bit for bit, the cache of an AR run that committed the same tokens one at
// a time, and the tokens must be AR's. 300 tokens with k cycling through {1, 4, 8} wrap a
// 16-row sliding window many times over.
//
// Planted defects (a test-side cache wrapping the real one) must fail the same check: a ring of
// exactly `window` slots, a rollback that installs the recurrent state of row keep + 1, and one
// that leaves the conv window as the last pending row left it.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "common/error.h"
#include "model/evaluator.h"
#include "support/cache_compare.h"
#include "support/reference.h"
#include "support/requested_isa.h"
#include "test_paths.h"

namespace augur::cache {
namespace {

constexpr int kGenerated = 300;
constexpr int kDraftLengths[] = {1, 4, 8};
constexpr int64_t kUbatch = 8;  // a 9-row verify spans two forwards: pending rows accumulate

enum class Defect { kNone, kRingOfWindowSlots, kStateOfKeepPlusOne, kConvWindowLeftBehind };

// The real cache, or the real cache with one planted defect, seen through Cache + Memory.
class TestCache final : public Cache, public model::Memory {
 public:
  TestCache(const model::Model& m, const CacheOptions& options, Defect defect)
      : inner_(m, options), defect_(defect), conv_floats_(conv_floats(m)) {}

  int64_t size() const override { return inner_.size(); }
  int64_t pending() const override { return inner_.pending(); }
  void truncate(int64_t n) override { inner_.truncate(n); }
  model::Memory& memory() override { return *this; }

  void commit(int64_t keep) override {
    model::Memory& m = inner_.memory();
    const int64_t size = inner_.size(), pending = inner_.pending();
    std::vector<std::vector<float>> planted(static_cast<size_t>(n_layers()));
    for (int layer = 0; layer < n_layers(); ++layer) {
      const auto spec = layer_cache(layer);
      if (spec.kind != model::LayerCache::Kind::kRecurrent || keep == pending) continue;
      if (defect_ == Defect::kStateOfKeepPlusOne) {
        const float* s = m.state(layer, size + keep + 1);
        planted[layer].assign(s, s + spec.state_floats);
      } else if (defect_ == Defect::kConvWindowLeftBehind) {
        const float* s = m.state(layer, size + pending);
        planted[layer].assign(s, s + conv_floats_);
      }
    }
    inner_.commit(keep);
    for (int layer = 0; layer < n_layers(); ++layer) {
      if (!planted[layer].empty()) {
        std::copy(planted[layer].begin(), planted[layer].end(), m.state(layer, inner_.size()));
      }
    }
  }

  int64_t n_rows() const override { return inner_.size() + inner_.pending(); }
  int64_t capacity() const override { return inner_.capacity(); }
  int64_t max_batch() const override { return inner_.max_batch(); }
  int n_layers() const override { return inner_.n_layers(); }
  int n_heads() const override { return inner_.n_heads(); }
  model::LayerCache layer_cache(int layer) const override { return inner_.layer_cache(layer); }
  void advance(int64_t n) override { inner_.memory().advance(n); }

 protected:
  model::KvRows layer_kv(int layer) override {
    model::KvRows kv = inner_.memory().kv(layer);
    // The rows of kv head h then sit in slots [h * window, (h + 1) * window) of the real ring's
    // buffer: a genuine ring of `window` slots.
    if (defect_ == Defect::kRingOfWindowSlots && kv.window > 0) kv.slots = kv.window;
    return kv;
  }
  float* layer_state(int layer, int64_t rows) override {
    return inner_.memory().state(layer, rows);
  }

 private:
  // Floats of the conv window at the start of a Gated DeltaNet state: (kernel - 1) x channels.
  static int64_t conv_floats(const model::Model& m) {
    const auto* conv = m.file().find_tensor("blk.0.ssm_conv1d.weight");
    return conv ? (conv->ne[0] - 1) * conv->ne[1] : 0;
  }

  ModelCache inner_;
  Defect defect_;
  int64_t conv_floats_;
};

int32_t argmax(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

struct Outcome {
  std::vector<int32_t> tokens;  // generated
  std::string difference;       // the first cache difference after a cycle, or empty
  int cycles = 0, rejections = 0;
  int64_t max_keep = 0;
};

struct Case {
  std::string name;
  std::string fixture;
  std::string cache_type = "f32";
  Defect defect = Defect::kNone;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class RollbackExactness : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE();
    const Case& c = GetParam();
    model_ = model::load_model(testing::fixtures_dir() / (c.fixture + ".gguf"));
    const auto ref = testing::read_json(testing::fixtures_dir() / (c.fixture + ".ref.json"));
    prompt_ = ref["prompts"][2].get<std::vector<int32_t>>();
    options_.capacity = static_cast<int64_t>(prompt_.size()) + kGenerated + 16;
    options_.max_batch = kUbatch;
    options_.type_k = options_.type_v = parse_cache_type(c.cache_type);
  }

  // AR greedy: one token per forward on a fresh cache; `ar_cache` is left holding the prompt.
  std::vector<int32_t> ar_tokens(kernels::ThreadPool& pool) {
    ModelCache cache(*model_, options_);
    model::Evaluator eval(*model_, pool, kUbatch, options_.capacity);
    std::vector<float> logits(static_cast<size_t>(n_vocab()));
    std::vector<int32_t> out;
    eval.forward_last(prompt_, cache.memory(), logits.data());
    cache.commit(static_cast<int64_t>(prompt_.size()));
    while (static_cast<int>(out.size()) < kGenerated + 16) {
      out.push_back(argmax(logits.data(), n_vocab()));
      eval.forward_last(std::vector<int32_t>{out.back()}, cache.memory(), logits.data());
      cache.commit(1);
    }
    return out;
  }

  Outcome run_speculative(TestCache& cache, const std::vector<int32_t>& ar,
                          kernels::ThreadPool& pool) {
    model::Evaluator eval(*model_, pool, kUbatch, options_.capacity);
    ModelCache ar_cache(*model_, options_);  // AR over the same tokens, one per forward
    std::vector<int32_t> ar_fed;             // tokens whose rows ar_cache holds
    std::vector<float> logits(static_cast<size_t>(9 * n_vocab()));
    Outcome out;
    eval.forward_last(prompt_, cache.memory(), logits.data());
    cache.commit(static_cast<int64_t>(prompt_.size()));
    std::vector<int32_t> committed = prompt_;  // cache rows: all but the carry
    out.tokens.push_back(argmax(logits.data(), n_vocab()));
    committed.push_back(out.tokens.back());
    while (static_cast<int>(out.tokens.size()) < kGenerated) {
      const int k = kDraftLengths[out.cycles % 3];
      const size_t g = out.tokens.size();  // ar[g..] are the tokens after the carry
      std::vector<int32_t> rows = {committed.back()};
      const int spoil = out.cycles % (k + 1);  // == k: every draft right
      for (int i = 0; i < k; ++i) {
        const int32_t t = ar[g + i];
        rows.push_back(i == spoil ? (t + 1) % static_cast<int32_t>(n_vocab()) : t);
      }
      std::vector<int32_t> positions(rows.size()), out_rows(rows.size());
      std::iota(positions.begin(), positions.end(), static_cast<int32_t>(cache.size()));
      std::iota(out_rows.begin(), out_rows.end(), 0);
      eval.forward(rows, positions, out_rows, cache.memory(), logits.data());
      int j = 0;
      while (j < k && argmax(&logits[j * n_vocab()], n_vocab()) == rows[j + 1]) ++j;
      const int32_t next = argmax(&logits[j * n_vocab()], n_vocab());
      cache.commit(j + 1);
      ++out.cycles;
      out.rejections += j < k;
      out.max_keep = std::max<int64_t>(out.max_keep, j + 1);
      for (int i = 1; i <= j; ++i) {
        out.tokens.push_back(rows[i]);
        committed.push_back(rows[i]);
      }
      out.tokens.push_back(next);
      committed.push_back(next);
      if (!std::equal(out.tokens.begin(), out.tokens.end(), ar.begin())) return out;
      // The AR run catches up to the rows the speculative cache now holds.
      while (static_cast<int64_t>(ar_fed.size()) < cache.size()) {
        const size_t i = ar_fed.size();
        ar_fed.push_back(committed[i]);
        std::vector<int32_t> one = {committed[i]}, pos = {static_cast<int32_t>(i)};
        eval.forward(one, pos, {}, ar_cache.memory(), nullptr);
        ar_cache.commit(1);
      }
      out.difference =
          testing::first_cache_difference(cache.memory(), ar_cache.memory(), cache.size());
      if (!out.difference.empty()) {
        out.difference = "cycle " + std::to_string(out.cycles) + ": " + out.difference;
        return out;
      }
    }
    return out;
  }

  int64_t n_vocab() const { return model_->hparams().n_vocab; }

  std::unique_ptr<model::Model> model_;
  std::vector<int32_t> prompt_;
  CacheOptions options_;
};

TEST_P(RollbackExactness, CacheEqualsArCacheAfterEveryCycle) {
  const Case& c = GetParam();
  kernels::ThreadPool pool(2);
  const auto ar = ar_tokens(pool);
  TestCache cache(*model_, options_, c.defect);
  const Outcome out = run_speculative(cache, ar, pool);
  const bool same_tokens = std::equal(out.tokens.begin(), out.tokens.end(), ar.begin()) &&
                           static_cast<int>(out.tokens.size()) >= kGenerated;
  if (c.defect != Defect::kNone) {
    EXPECT_TRUE(!same_tokens || !out.difference.empty())
        << c.name << ": the planted defect went unnoticed over " << out.cycles << " cycles";
    std::printf("[ defect   ] %s caught at cycle %d: %s\n", c.name.c_str(), out.cycles,
                out.difference.empty() ? "tokens departed from AR" : out.difference.c_str());
    return;
  }
  EXPECT_TRUE(same_tokens) << c.name << ": tokens departed from AR at cycle " << out.cycles;
  EXPECT_EQ(out.difference, "") << c.name;
  EXPECT_GT(out.rejections, out.cycles / 3) << "rollback was rarely exercised";
  EXPECT_EQ(out.max_keep, 9) << "a fully accepted k = 8 draft never occurred";
  const int64_t window = model_->hparams().sliding_window;
  if (window > 0) {
    EXPECT_GT(kGenerated, 4 * (window + 9)) << "the ring wraps many times over";
  }
  std::printf("[ rollback ] %s: %d cycles, %d with a rejection, exact\n", c.name.c_str(),
              out.cycles, out.rejections);
}

INSTANTIATE_TEST_SUITE_P(
    Caches, RollbackExactness,
    ::testing::Values(
        Case{"llama_full_f32", "tiny-llama"}, Case{"llama_full_q8_0", "tiny-llama", "q8_0"},
        Case{"gemma3_ring_f32", "tiny-gemma3"}, Case{"gemma3_ring_f16", "tiny-gemma3", "f16"},
        Case{"gemma3_ring_q8_0", "tiny-gemma3", "q8_0"},
        Case{"gemma3_ring_q4_0", "tiny-gemma3", "q4_0"}, Case{"qwen3moe_full_f32", "tiny-qwen3moe"},
        Case{"qwen35_hybrid_f32", "tiny-qwen35"}, Case{"qwen35_hybrid_q8_0", "tiny-qwen35", "q8_0"},
        Case{"gemma3_ring_of_window_slots", "tiny-gemma3", "f32", Defect::kRingOfWindowSlots},
        Case{"qwen35_state_of_keep_plus_one", "tiny-qwen35", "f32", Defect::kStateOfKeepPlusOne},
        Case{"qwen35_conv_window_left_behind", "tiny-qwen35", "f32",
             Defect::kConvWindowLeftBehind}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace augur::cache
