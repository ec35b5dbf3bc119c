// After every speculative cycle a pair-head drafter's cache (an EAGLE-3 head, or a target's MTP
// layer) holds exactly the pairs of committed tokens (t_{P+1}, g_P), g_P fused from the target's
// features of committed row P (MTP: h_P, at position P + 1): compared byte for byte with a cache
// built from scratch — one target forward over the committed tokens with feature capture, then one
// head forward over all their pairs (support/cache_state_run.h) — after each cycle of greedy and
// sampled runs at k in {1, 4, 8}, prefix reuse across runs included.
//
// Planted defects, each fed through the real DraftSource interface by a wrapper around the real
// drafter, must be caught: (a) features of the next row handed over for each row (an off-by-one
// in the capture), (b) a verify's features replaced by the previous verify's (stale rows), (c)
// the prompt's features handed over one position late (a prefill offset), (d) each proposal's
// context one token short (rows lagging, a correct prefix still: the row bound's case), (e) the
// drafter's list of its rows' tokens wrong in its last token (the token check's case).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "cache/model_cache.h"
#include "engine/generator.h"
#include "model/evaluator.h"
#include "model/heads/eagle3.h"
#include "model/heads/nextn.h"
#include "support/cache_compare.h"
#include "support/cache_state_run.h"
#include "support/mtp_targets.h"
#include "support/requested_isa.h"
#include "support/run_command.h"
#include "support/spec_setup.h"

namespace augur::engine {
namespace {

using testing::Defect;
using testing::Outcome;

// The cache built from scratch for the pairs of `committed`: features of every row but the carry
// from one target forward, fused, then one head forward over the pairs.
testing::CacheStateProbe probe(const model::Model& target, const model::heads::PairHead& head,
                               spec::PairHeadDrafter& drafter, kernels::ThreadPool& pool) {
  testing::CacheStateProbe p;
  p.memory = [&drafter]() -> model::Memory& {
    return const_cast<cache::ModelCache&>(drafter.cache()).memory();
  };
  p.claimed_tokens = [&drafter] { return drafter.pair_tokens(); };
  p.expected_tokens = [](std::span<const int32_t> committed, int64_t rows) {
    const auto pairs = committed.first(static_cast<size_t>(rows) + 1);  // row P pairs t_{P+1}
    return std::vector<int32_t>(pairs.begin(), pairs.end());
  };
  p.reference = [&](std::span<const int32_t> tokens) {
    const auto rows = static_cast<int64_t>(tokens.size()) - 1;
    const std::vector<float> features = testing::target_features(
        target, head.target_layers(), tokens.first(static_cast<size_t>(rows)), pool);
    std::vector<int32_t> positions(static_cast<size_t>(rows));
    std::iota(positions.begin(), positions.end(), head.position_offset());
    std::vector<float> g(static_cast<size_t>(rows * head.hidden_in_width()));
    head.fuse(features.data(), rows, g.data(), pool);
    auto want = std::make_unique<cache::ModelCache>(
        head, cache::CacheOptions{.capacity = rows, .max_batch = rows});
    model::Evaluator head_eval(head, pool, rows, rows);
    head_eval.forward(tokens.subspan(1), positions, {}, want->memory(), nullptr, -1,
                      {.hidden_in = g.data()});
    want->commit(rows);
    return want;
  };
  return p;
}

// zoo-target with the EAGLE-3 echo head, or (mtp) zoo-target with an echo MTP layer appended.
Outcome run(Defect defect, float temperature, bool mtp = false) {
  std::filesystem::path path = testing::models_dir() / "zoo-target-f16.gguf";
  if (mtp) {
    const auto copy = testing::temp_path("mtp-cache-state.gguf");
    testing::write_target_with_echo_mtp(path, copy);
    path = copy;
  }
  auto target = model::load_model(path);
  if (mtp) std::filesystem::remove(path);  // the mapping stays valid
  kernels::ThreadPool pool(2);
  std::unique_ptr<model::heads::PairHead> mtp_head;
  testing::DrafterHolder holder;
  if (mtp) {
    mtp_head = model::heads::NextN::load(*target);
    holder.drafter = std::make_unique<spec::PairHeadDrafter>(*mtp_head, pool, 512, 16);
  } else {
    holder = testing::make_test_drafter("eagle3:echo", *target, pool, 512, 16);
  }
  auto& inner = static_cast<spec::PairHeadDrafter&>(*holder.drafter);
  const auto& head = mtp ? *mtp_head : static_cast<const model::heads::PairHead&>(*holder.head);
  return testing::run_cache_state(*target, pool, inner, defect, temperature,
                                  probe(*target, head, inner, pool));
}

class PairHeadCacheState : public ::testing::Test {
 protected:
  void SetUp() override { AUGUR_SKIP_IF_REQUESTED_ISA_UNAVAILABLE(); }
};

TEST_F(PairHeadCacheState, HoldsExactlyTheCommittedPairsAfterEveryCycle) {
  for (const float temperature : {0.0f, 0.8f}) {
    const Outcome o = run(Defect::kNone, temperature);
    EXPECT_EQ(o.first_difference, "") << "T=" << temperature;
    // Both kinds of cycle happened: some drafts kept, some rejected.
    EXPECT_GT(o.accepted, 0) << "T=" << temperature;
    EXPECT_LT(o.accepted, o.drafted) << "T=" << temperature;
  }
}

// Each planted defect is caught, by the check meant for it.
void expect_planted_defects_caught(bool mtp) {
  for (const auto& [defect, caught_by] : testing::kPlantedDefects) {
    const Outcome o = run(defect, 0.0f, mtp);
    const std::string what = std::string(mtp ? "MTP" : "EAGLE-3") + ", defect " +
                             std::to_string(static_cast<int>(defect));
    EXPECT_NE(o.first_difference, "") << what << " went unnoticed";
    EXPECT_NE(o.first_difference.find(caught_by), std::string::npos)
        << what << " was not caught by the check meant for it";
  }
}

TEST_F(PairHeadCacheState, PlantedDefectsAreCaught) {
  expect_planted_defects_caught(false);
}

TEST_F(PairHeadCacheState, MtpLayerHoldsExactlyTheCommittedPairsAfterEveryCycle) {
  for (const float temperature : {0.0f, 0.8f}) {
    const Outcome o = run(Defect::kNone, temperature, /*mtp=*/true);
    EXPECT_EQ(o.first_difference, "") << "T=" << temperature;
    EXPECT_GT(o.drafted, 0) << "T=" << temperature;
    EXPECT_LT(o.accepted, o.drafted) << "T=" << temperature;
  }
  expect_planted_defects_caught(/*mtp=*/true);
}

}  // namespace
}  // namespace augur::engine

namespace augur::engine {
namespace {

// Without drift the echo head's y is g = the target's final normed hidden state of the row it
// reads, and its logits are those through the target's own output head (renormed: a positive
// scale). Row P pairs t_{P+1} with g_P, and g_P is what the target predicted t_{P+1} from, so in
// a greedy session every first draft must be the carry token itself (the target's greedy choice
// at the last committed row). It checks feature capture at tap n_layer, the row each g is taken
// from, fc, the head's residual path and the shared output head together.
class FirstDraftRecorder final : public spec::DraftSource {
 public:
  explicit FirstDraftRecorder(spec::PairHeadDrafter& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::span<const int32_t> feature_layers() const override { return inner_.feature_layers(); }
  int64_t reusable_prefix(std::span<const int32_t> p) const override {
    return inner_.reusable_prefix(p);
  }
  void take_features(int64_t first, int64_t n, int64_t n_embd, const float* f) override {
    inner_.take_features(first, n, n_embd, f);
  }
  void begin(std::span<const int32_t> prompt) override { inner_.begin(prompt); }
  void propose(const spec::DraftRequest& r, spec::Draft& out) override {
    inner_.propose(r, out);
    if (out.tokens.empty()) return;
    ++proposals;
    carry_echoed += out.tokens[0] == r.context.back();
  }
  void observe(int n) override { inner_.observe(n); }
  int64_t memory_bytes() const override { return inner_.memory_bytes(); }
  int64_t proposals = 0, carry_echoed = 0;

 private:
  spec::PairHeadDrafter& inner_;
};

TEST_F(PairHeadCacheState, DriftlessEchoHeadFirstDraftIsTheCarry) {
  auto target = model::load_model(testing::models_dir() / "zoo-target-f16.gguf");
  kernels::ThreadPool pool(2);
  const auto path = std::filesystem::temp_directory_path() /
                    ("augur-pure-echo-" + std::to_string(::getpid()) + ".gguf");
  testing::write_echo_eagle3(*target, path, {.mix = 0.0f});
  const auto head = model::heads::Eagle3::load(path, *target);
  std::filesystem::remove(path);
  const int64_t n_ctx = 512;
  spec::PairHeadDrafter inner(*head, pool, n_ctx, 16);
  FirstDraftRecorder drafter(inner);
  Generator gen(*target, pool, n_ctx, 16);
  const auto sampler = testing::make_sampler(*target, 0.0f);
  sampling::SeededRng rng(1);
  for (const auto& prompt : testing::zoo_prompts(*target, 3)) {
    GenerateOptions opt;
    opt.n_predict = 64;
    opt.ignore_eos = true;
    opt.drafter = &drafter;
    opt.draft_max = 4;
    gen.generate(prompt, sampler, rng, opt, testing::kNeverEog);
  }
  std::printf("[ eagle3   ] driftless echo: %lld of %lld first drafts are the carry\n",
              static_cast<long long>(drafter.carry_echoed),
              static_cast<long long>(drafter.proposals));
  EXPECT_GT(drafter.proposals, 20);
  EXPECT_EQ(drafter.carry_echoed, drafter.proposals);
}

}  // namespace
}  // namespace augur::engine
