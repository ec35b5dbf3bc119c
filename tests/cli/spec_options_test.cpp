// `augur run` with speculative decoding, end to end through the real binary: every drafter
// (--draft ngram[:N], layerskip:L, model, and auto -- the default, alone or restricted, with
// -md / --model-draft) reproduces plain greedy decoding token for token and reports consistent
// stats (auto: a policy object whose counts add up, and a per-cycle log); sampling works with
// each; bad draft options exit 2 (invalid argument) and a draft model with another vocabulary
// exits 3 (unsupported), each with a message naming the problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur {
namespace {

using testing::quote;
using testing::run_command;

constexpr int kGreedyTokens = 40;
constexpr int kSampledTokens = 24;

std::filesystem::path target_model() {
  return testing::models_dir() / "zoo-target-q8_0.gguf";
}
std::filesystem::path draft_model() {
  return testing::models_dir() / "zoo-draft-f16.gguf";
}

// `augur run` on the zoo target with a code prompt, JSON output, plus `extra` options.
testing::CommandResult run_target(const std::string& extra) {
  return run_command(quote(testing::augur_bin()) + " run -m " + quote(target_model()) +
                     " -p 'def f(x):' --json --ignore-eos -t 2 " + extra);
}

std::string greedy(int n) {
  return " --temp 0 -n " + std::to_string(n) + " ";
}

struct DraftCase {
  std::string label;                      // test name suffix
  std::string options;                    // the draft options given to `augur run`
  std::string drafter;                    // stats.draft expected
  int draft_max;                          // the k the options ask for
  std::vector<std::string> sources = {};  // auto: the sources its policy plans over
};

std::vector<DraftCase> draft_cases() {
  const std::string md = quote(draft_model());
  return {
      {"Ngram", "--draft ngram", "ngram", 8},
      {"NgramOfTwoWithDraftMax3", "--draft ngram:2 --draft-max 3", "ngram", 3},
      {"Layerskip2", "--draft layerskip:2", "layerskip", 8},
      {"LayerskipWithDraftMax32", "--draft layerskip:2 --draft-max 32", "layerskip", 32},
      // -md without --draft: auto, with the draft model among its sources.
      {"DraftModelShortOption", "-md " + md, "auto", 8, {"model", "ngram", "layerskip"}},
      {"DraftModelLongOption", "--model-draft " + md, "auto", 8, {"model", "ngram", "layerskip"}},
      {"DefaultIsAuto", "", "auto", 8, {"ngram", "layerskip"}},
      {"AutoExplicit", "--draft auto --draft-max 6", "auto", 6, {"ngram", "layerskip"}},
      {"AutoRestricted",
       "--draft auto:model+ngram -md " + md + " --draft-max 4",
       "auto",
       4,
       {"model", "ngram"}},
      {"AutoNgramOnly", "--draft auto:ngram", "auto", 8, {"ngram"}},
      {"DraftModelExplicitWithDraftMax5", "--draft model -md " + md + " --draft-max 5", "model", 5},
  };
}

// The tokens and stats of plain decoding, computed once.
const nlohmann::json& plain_greedy() {
  static const nlohmann::json result = [] {
    const auto r = run_target(greedy(kGreedyTokens) + "--draft none");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }();
  return result;
}

// The speculative stats add up: every cycle is in the histogram once, the accepted drafts are
// its weighted sum, per-position counts sum to the totals, and (with --ignore-eos and a token
// limit no cycle overshoots) every token after the first came from a cycle.
void expect_consistent_spec_stats(const nlohmann::json& stats, const DraftCase& c, int n_gen) {
  ASSERT_TRUE(stats.contains("draft")) << stats.dump();
  EXPECT_EQ(stats["draft"].get<std::string>(), c.drafter);
  const auto cycles = stats["cycles"].get<int64_t>();
  const auto drafted = stats["drafted"].get<int64_t>();
  const auto accepted = stats["accepted"].get<int64_t>();
  EXPECT_GT(cycles, 0);
  EXPECT_GT(drafted, 0);
  EXPECT_GE(accepted, 0);
  EXPECT_LE(accepted, drafted);
  EXPECT_DOUBLE_EQ(stats["tau"].get<double>(),
                   static_cast<double>(accepted + cycles) / static_cast<double>(cycles));
  const auto hist = stats["accept_hist"].get<std::vector<int64_t>>();
  ASSERT_EQ(hist.size(), static_cast<size_t>(c.draft_max) + 1);
  EXPECT_EQ(std::accumulate(hist.begin(), hist.end(), int64_t{0}), cycles);
  int64_t weighted = 0;
  for (size_t kept = 0; kept < hist.size(); ++kept)
    weighted += static_cast<int64_t>(kept) * hist[kept];
  EXPECT_EQ(weighted, accepted);
  const auto drafted_at = stats["drafted_at"].get<std::vector<int64_t>>();
  const auto accepted_at = stats["accepted_at"].get<std::vector<int64_t>>();
  ASSERT_EQ(drafted_at.size(), static_cast<size_t>(c.draft_max));
  ASSERT_EQ(accepted_at.size(), static_cast<size_t>(c.draft_max));
  EXPECT_EQ(std::accumulate(drafted_at.begin(), drafted_at.end(), int64_t{0}), drafted);
  EXPECT_EQ(std::accumulate(accepted_at.begin(), accepted_at.end(), int64_t{0}), accepted);
  for (size_t pos = 0; pos < accepted_at.size(); ++pos) {
    EXPECT_LE(accepted_at[pos], drafted_at[pos]) << "position " << pos + 1;
    if (pos > 0) {
      EXPECT_LE(drafted_at[pos], drafted_at[pos - 1]) << "position " << pos + 1;
    }
  }
  EXPECT_EQ(accepted + cycles, n_gen - 1) << stats.dump();
  if (c.drafter != "auto") {
    EXPECT_FALSE(stats.contains("policy")) << stats.dump();
    return;
  }
  // The policy's own counts: every cycle is an AR step or a cycle of one source, and no source
  // outside the ones asked for.
  ASSERT_TRUE(stats.contains("policy")) << stats.dump();
  const auto& policy = stats["policy"];
  int64_t by_source = 0;
  std::vector<std::string> names;
  for (const auto& [name, n] : policy["cycles_by_source"].items()) {
    names.push_back(name);
    by_source += n.get<int64_t>();
  }
  for (auto& name : names) name = name.substr(0, name.find(':'));  // layerskip:L at each depth
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  auto want = c.sources;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names, want);
  EXPECT_EQ(by_source + policy["ar_steps"].get<int64_t>(), cycles) << policy.dump();
  EXPECT_NEAR(policy["mean_k"].get<double>() * static_cast<double>(cycles),
              static_cast<double>(drafted), 1e-6);
  EXPECT_NEAR(policy["observed_tokens_per_cycle"].get<double>(), stats["tau"].get<double>(), 1e-9);
  EXPECT_GT(policy["predicted_tokens_per_cycle"].get<double>(), 1.0);
  EXPECT_GT(policy["observed_s_per_cycle"].get<double>(), 0.0);
  EXPECT_LE(policy["explorations"].get<int64_t>(), cycles);
}

class CliSpeculative : public ::testing::TestWithParam<DraftCase> {};

TEST(CliSpeculativeBaseline, PlainDecodingReportsNoSpeculativeStats) {
  const auto& plain = plain_greedy();
  ASSERT_FALSE(plain.is_null());
  EXPECT_EQ(plain["tokens"].size(), static_cast<size_t>(kGreedyTokens));
  EXPECT_FALSE(plain["stats"].contains("draft")) << plain["stats"].dump();
  EXPECT_FALSE(plain["stats"].contains("cycles")) << plain["stats"].dump();
}

TEST_P(CliSpeculative, GreedyOutputEqualsPlainDecodingAndStatsAddUp) {
  const DraftCase& c = GetParam();
  const auto& plain = plain_greedy();
  ASSERT_FALSE(plain.is_null());
  const auto r = run_target(greedy(kGreedyTokens) + c.options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_tokens"], plain["prompt_tokens"]);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), plain["tokens"].get<std::vector<int32_t>>());
  EXPECT_EQ(j["text"], plain["text"]);
  EXPECT_EQ(j["stats"]["n_gen"].get<int>(), kGreedyTokens);
  expect_consistent_spec_stats(j["stats"], c, kGreedyTokens);
  // Each drafter finds something the target keeps on this repetitive code continuation.
  EXPECT_GT(j["stats"]["accepted"].get<int64_t>(), 0) << j["stats"].dump();
  // The human-readable summary on stderr names the drafter and k (auto: and its choices).
  EXPECT_NE(r.err.find("speculative: " + c.drafter + ", k=" + std::to_string(c.draft_max)),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("policy: cycles") != std::string::npos, c.drafter == "auto") << r.err;
}

TEST_P(CliSpeculative, SampledWithSeedGeneratesAllTokens) {
  const DraftCase& c = GetParam();
  const auto r =
      run_target("--temp 0.8 --seed 1234 -n " + std::to_string(kSampledTokens) + " " + c.options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"].size(), static_cast<size_t>(kSampledTokens));
  EXPECT_EQ(j["stats"]["n_gen"].get<int>(), kSampledTokens);
  EXPECT_EQ(j["seed"].get<uint64_t>(), 1234u);
  expect_consistent_spec_stats(j["stats"], c, kSampledTokens);
}

INSTANTIATE_TEST_SUITE_P(Drafters, CliSpeculative, ::testing::ValuesIn(draft_cases()),
                         [](const auto& info) { return info.param.label; });

// A bad draft option: exit 2 and a message containing every one of `expected`.
struct BadOption {
  std::string options;
  std::vector<std::string> expected;
};

TEST(CliSpeculativeErrors, BadDraftOptionsExitTwoNamingTheOption) {
  const std::string md = quote(draft_model());
  const auto target = gguf::File::open(target_model());
  const auto n_layer =
      target->get_int(std::string(target->get_string("general.architecture")) + ".block_count");
  const std::string layers = "1.." + std::to_string(n_layer);
  const std::vector<BadOption> cases = {
      {"--draft ngram --draft-max 0", {"--draft-max 0", "1..32"}},
      {"--draft ngram --draft-max 33", {"--draft-max 33", "1..32"}},
      {"-md " + md + " --draft-max 0", {"--draft-max 0"}},
      {"--draft layerskip:2 --draft-max 33", {"--draft-max 33"}},
      {"--draft bogus", {"--draft bogus", "ngram", "layerskip"}},
      {"--draft model:2", {"--draft model:2"}},
      {"--draft layerskip", {"--draft layerskip", "depth"}},
      {"--draft layerskip:", {"--draft layerskip:", "whole number"}},
      {"--draft layerskip:0", {"depth 0", layers}},
      {"--draft layerskip:" + std::to_string(n_layer + 1),
       {"depth " + std::to_string(n_layer + 1), layers}},
      {"--draft layerskip:99", {"depth 99", layers}},
      {"--draft ngram:0", {"--draft ngram:0", "1..64"}},
      {"--draft ngram:65", {"--draft ngram:65", "1..64"}},
      {"--draft ngram:x", {"--draft ngram:x", "'x'"}},
      {"--draft ngram:3x", {"--draft ngram:3x", "'3x'"}},
      {"--draft model", {"--draft model", "-md"}},
      {"--draft ngram -md " + md, {"-md", "--draft ngram"}},
      {"--draft none --model-draft " + md, {"--model-draft", "--draft none"}},
      {"--draft auto:bogus", {"--draft auto:bogus", "'bogus'", "ngram"}},
      {"--draft auto:", {"--draft auto:", "not a draft source"}},
      {"--draft auto:ngram+ngram", {"ngram", "twice"}},
      {"--draft auto:model", {"model", "-md"}},
      {"--draft ngram --policy-log x.jsonl", {"--policy-log", "--draft ngram"}},
      {"--draft auto --policy-log /nonexistent/dir/log.jsonl",
       {"--policy-log", "/nonexistent/dir/log.jsonl"}},
  };
  for (const auto& c : cases) {
    const auto r = run_target(greedy(4) + c.options);
    EXPECT_EQ(r.exit_code, 2) << c.options << ": " << r.err;
    EXPECT_NE(r.err.find("invalid argument"), std::string::npos) << c.options << ": " << r.err;
    for (const auto& part : c.expected) {
      EXPECT_NE(r.err.find(part), std::string::npos)
          << c.options << ": '" << part << "' not in: " << r.err;
    }
    EXPECT_TRUE(r.out.empty()) << c.options << ": " << r.out;
  }
}

TEST(CliSpeculativePolicyLog, OneJsonLinePerCycleThatAddsUpToTheStats) {
  const auto dir = std::filesystem::temp_directory_path() / "augur_policy_log_test";
  std::filesystem::create_directories(dir);
  const auto log = dir / "cycles.jsonl";
  const auto r = run_target(greedy(kGreedyTokens) + "--draft auto -md " + quote(draft_model()) +
                            " --policy-log " + quote(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto stats = nlohmann::json::parse(r.out)["stats"];
  std::ifstream in(log);
  int64_t lines = 0, accepted = 0, drafted = 0, explorations = 0;
  std::map<std::string, int64_t> by_source;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["cycle"].get<int64_t>(), lines) << line;
    ++lines;
    accepted += j["accepted"].get<int64_t>();
    drafted += j["drafted"].get<int64_t>();
    explorations += j["explore"].get<bool>() ? 1 : 0;
    const auto source = j["source"].get<std::string>();
    EXPECT_LE(j["drafted"].get<int>(), j["k"].get<int>()) << line;
    EXPECT_LE(j["accepted"].get<int>(), j["drafted"].get<int>()) << line;
    EXPECT_GE(j["predicted_accepted"].get<double>(), 0.0) << line;
    EXPECT_GT(j["predicted_s"].get<double>(), 0.0) << line;
    EXPECT_GT(j["actual_s"].get<double>(), 0.0) << line;
    if (source == "ar") {
      EXPECT_EQ(j["k"].get<int>(), 0) << line;
    } else {
      ++by_source[source];
    }
  }
  EXPECT_EQ(lines, stats["cycles"].get<int64_t>());
  EXPECT_EQ(accepted, stats["accepted"].get<int64_t>());
  EXPECT_EQ(drafted, stats["drafted"].get<int64_t>());
  EXPECT_EQ(explorations, stats["policy"]["explorations"].get<int64_t>());
  for (const auto& [source, n] : by_source) {
    EXPECT_EQ(n, stats["policy"]["cycles_by_source"][source].get<int64_t>()) << source;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliSpeculativeErrors, NegativeLayerskipDepthIsRejected) {
  // A negative depth must not fall through to "all layers" (a full self-draft named "model").
  const auto r = run_target(greedy(4) + "--draft layerskip:-1");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("-1"), std::string::npos) << r.err;
}

TEST(CliSpeculativeErrors, DraftModelWithAnotherVocabularyIsUnsupported) {
  const auto other = testing::fixtures_dir() / "tiny-llama.gguf";
  for (const std::string option : {"-md ", "--model-draft "}) {
    const auto r = run_target(greedy(4) + option + quote(other));
    EXPECT_EQ(r.exit_code, 3) << option << ": " << r.err;
    EXPECT_NE(r.err.find("unsupported"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("vocabulary"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(other.string()), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace augur
