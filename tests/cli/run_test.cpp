// `augur run`, `augur logits` and `augur tokenize` end to end through the real binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/cache_figures.h"
#include "support/reference.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur {
namespace {

using testing::quote;
using testing::run_command;

std::string augur() {
  return quote(testing::augur_bin());
}
std::filesystem::path fixture(const std::string& name) {
  return testing::fixtures_dir() / name;
}

std::string ids_arg(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

TEST(CliHelp, ListsEverySubcommandAndItsOptions) {
  const auto top = run_command(augur() + " --help");
  EXPECT_EQ(top.exit_code, 0);
  for (const char* sub : {"run", "logits", "tokenize"})
    EXPECT_NE(top.out.find(sub), std::string::npos) << sub;
  const auto run = run_command(augur() + " run --help");
  EXPECT_EQ(run.exit_code, 0);
  for (const char* opt : {"--model", "--prompt", "--file", "--prompt-ids", "--n-predict", "--temp",
                          "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--seed",
                          "--threads", "--ctx-size", "--ubatch", "--ignore-eos", "--json"}) {
    EXPECT_NE(run.out.find(opt), std::string::npos) << opt;
  }
  EXPECT_EQ(run_command(augur() + " logits --help").exit_code, 0);
  EXPECT_EQ(run_command(augur() + " tokenize --help").exit_code, 0);
}

TEST(CliRun, GreedyJsonReproducesFixtureTokens) {
  const auto ref = testing::read_json(fixture("tiny-llama.ref.json"));
  const auto prompt = ref["prompts"][2].get<std::vector<int32_t>>();
  const auto expected = ref["greedy"][2]["tokens"].get<std::vector<int32_t>>();
  const auto r =
      run_command(augur() + " run -m " + quote(fixture("tiny-llama.gguf")) + " --prompt-ids " +
                  ids_arg(prompt) + " -n 48 --temp 0 --ignore-eos --json -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_tokens"].get<std::vector<int32_t>>(), prompt);  // no BOS added to ids
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), expected);
  ASSERT_TRUE(j["text"].is_string());
  for (const char* key :
       {"n_prompt", "n_gen", "prefill_s", "decode_s", "prefill_tok_s", "decode_tok_s"}) {
    EXPECT_TRUE(j["stats"].contains(key)) << key;
  }
  EXPECT_EQ(j["stats"]["n_gen"].get<int>(), 48);
  EXPECT_EQ(j["stats"]["n_prompt"].get<size_t>(), prompt.size());
  // Exactly one JSON object on stdout, nothing else.
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1);
}

// stats.memory: the caches' figures recompute from their raw inputs, the windowed layers hold a
// ring of window + slack rows (not the context), the layer-skip drafter's cache is reported
// apart, and the peak RSS holds them all.
TEST(CliRun, JsonReportsCacheMemoryAndPeakRss) {
  const auto r = run_command(augur() + " run -m " + quote(fixture("tiny-gemma3.gguf")) +
                             " --prompt-ids 2,10,20,30 -n 40 --temp 0 --ignore-eos --json -t 2"
                             " -c 1024 --ubatch 32 --draft layerskip:2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto memory = nlohmann::json::parse(r.out)["stats"]["memory"];
  const auto& target = memory["target_cache"];
  EXPECT_TRUE(bench::cache_figure_problems(target, 1024).empty()) << target.dump();
  EXPECT_EQ(target["full"]["layers"], 1);
  EXPECT_EQ(target["full"]["slots"], 1024);
  EXPECT_EQ(target["window"]["layers"], 5);
  EXPECT_EQ(target["window"]["slots"], 16 + 33);  // window + the longest rollback (> ubatch)
  ASSERT_EQ(memory["draft_caches"].size(), 1u) << memory.dump();
  const auto& draft = memory["draft_caches"]["layerskip"];
  EXPECT_TRUE(bench::cache_figure_problems(draft, 1024).empty()) << draft.dump();
  EXPECT_EQ(draft["window"]["layers"], 2);
  EXPECT_EQ(draft["full"]["layers"], 0);
  EXPECT_GE(memory["peak_rss_bytes"].get<int64_t>(),
            bench::cache_figure_bytes(target) + bench::cache_figure_bytes(draft));
  EXPECT_NE(r.err.find("memory: KV "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("| draft layerskip: KV "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("| peak RSS "), std::string::npos) << r.err;
}

TEST(CliRun, TextPromptFollowsAddBosAndStreamsText) {
  const auto model = testing::models_dir() / "zoo-draft-f16.gguf";
  const auto r = run_command(augur() + " run -m " + quote(model) +
                             " -p 'def main(args):' -n 8 --temp 0 --ignore-eos --json -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_tokens"][0].get<int>(), 1);  // zoo models set add_bos_token = true
  EXPECT_EQ(j["tokens"].size(), 8u);
  const auto text = run_command(augur() + " run -m " + quote(model) +
                                " -p 'def main(args):' -n 8 --temp 0 --ignore-eos -t 2");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, j["text"].get<std::string>() + "\n");
  EXPECT_NE(text.err.find("decode:"), std::string::npos);
  EXPECT_NE(text.err.find("tok/s"), std::string::npos);
}

// A seed reproduces the sampled tokens with a fixed drafting path (none, or one drafter at a
// fixed k). --draft auto chooses from live timings, so its tokens for one seed may differ from
// run to run (each run has exactly AR's law): README says so.
TEST(CliRun, SameSeedSameSampledTokens) {
  const auto model = quote(fixture("tiny-qwen2.gguf"));
  for (const std::string draft : {"none", "ngram", "layerskip:1"}) {
    const std::string cmd =
        augur() + " run -m " + model +
        " --prompt-ids 5,6,7 -n 24 --temp 1.0 --top-k 0 --top-p 1 --min-p 0 --seed 7 --json "
        "--draft " +
        draft;
    const auto a = run_command(cmd), b = run_command(cmd);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(nlohmann::json::parse(a.out)["tokens"], nlohmann::json::parse(b.out)["tokens"])
        << draft;
  }
}

TEST(CliRun, BadOptionsFailWithClearErrors) {
  const auto model = quote(fixture("tiny-llama.gguf"));
  auto r = run_command(augur() + " run -m " + model + " --prompt-ids 1,99999");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("99999"), std::string::npos) << r.err;
  r = run_command(augur() + " run -m " + model + " --prompt-ids 1,2 --top-p 1.5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("top_p"), std::string::npos) << r.err;
  r = run_command(augur() + " run -m " + model + " --prompt-ids 1,2 -n 100 -c 50");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("context"), std::string::npos) << r.err;
  r = run_command(augur() + " run -m /nonexistent.gguf -p hi");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/nonexistent.gguf"), std::string::npos) << r.err;
  r = run_command(augur() + " run -m " + model);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("prompt"), std::string::npos) << r.err;
}

TEST(CliLogits, WritesEveryPromptRowLikeTheReference) {
  const auto ref = testing::read_json(fixture("tiny-llama.ref.json"));
  const size_t longest = ref["prompts"].size() - 1;  // prompts are stored shortest first
  const auto prompt = ref["prompts"][longest].get<std::vector<int32_t>>();
  const auto out = testing::temp_path("logits.f32");
  const auto r =
      run_command(augur() + " logits -m " + quote(fixture("tiny-llama.gguf")) + " --prompt-ids " +
                  ids_arg(prompt) + " --ubatch 16 --out " + quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = testing::read_f32(out);
  std::filesystem::remove(out);
  const auto want = testing::read_f32(fixture("tiny-llama.logits.f32"));
  const size_t n_vocab = ref["n_vocab"].get<size_t>();
  ASSERT_EQ(got.size(), prompt.size() * n_vocab);
  const size_t offset = ref["logits_file"]["row_offsets"][longest].get<size_t>() * n_vocab;
  EXPECT_LE(testing::max_abs_diff(got.data(), want.data() + offset, got.size()),
            ref["recommended_tolerance"]["logits_atol"].get<float>());
}

TEST(CliTokenize, WorksOnVocabOnlyFiles) {
  const auto vocab = fixture("tokenizers/ggml-vocab-llama-spm.gguf");
  const auto with_bos = run_command(augur() + " tokenize -m " + quote(vocab) + " -p 'Hello world'");
  ASSERT_EQ(with_bos.exit_code, 0) << with_bos.err;
  const auto no_bos =
      run_command(augur() + " tokenize -m " + quote(vocab) + " -p 'Hello world' --no-bos");
  ASSERT_EQ(no_bos.exit_code, 0) << no_bos.err;
  EXPECT_EQ(with_bos.out, "1 " + no_bos.out);  // llama-spm: add_bos_token, BOS = 1
  // The expected ids come from the llama.cpp test vectors for the same text.
  const std::string inp = testing::slurp(vocab.string() + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> tests;
  for (size_t pos = 0, next; (next = inp.find(sep, pos)) != std::string::npos;
       pos = next + sep.size()) {
    tests.push_back(inp.substr(pos, next - pos));
  }
  const auto it = std::find(tests.begin(), tests.end(), "Hello world");
  ASSERT_NE(it, tests.end());
  std::istringstream lines(testing::slurp(vocab.string() + ".out"));
  std::string line;
  for (auto i = it - tests.begin(); i >= 0; --i) std::getline(lines, line);
  EXPECT_EQ(no_bos.out, line.substr(1) + "\n");
  const auto special =
      run_command(augur() + " tokenize -m " + quote(vocab) + " -p '<s>x' --no-bos --special");
  EXPECT_EQ(special.out.substr(0, 2), "1 ");
}

}  // namespace
}  // namespace augur
