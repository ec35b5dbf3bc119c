// The exit-code contract of README.md ("Exit codes", src/cli/exit_codes.h), for every
// subcommand, through the real binary: 0 ok, 1 a bad or unreadable file, 2 an invalid argument
// (CLI11's own parse errors included), 3 unsupported, 4 a report that breaks an evidence rule.
// One row per way to fail: the code, and what the message must name.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "support/bench_reports.h"
#include "support/gguf_rewrite.h"
#include "support/memory_cap.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur {
namespace {

namespace fs = std::filesystem;
using testing::quote;

// A hostile model must fail within this address space (loading a tiny model takes a few MB).
constexpr size_t kHostileCap = size_t{1} << 30;

struct ExitCase {
  std::string label;
  std::string args;  // after `augur`; {name} stands for the path of file `name` (paths())
  int code;
  std::vector<std::string> err;  // substrings of stderr ({name} expanded)
  std::vector<std::string> out;  // substrings of stdout ({name} expanded)
  bool capped = false;           // run under kHostileCap
};

void PrintTo(const ExitCase& c, std::ostream* os) {
  *os << c.label << ": augur " << c.args;
}

// Every path a case may name. Files under the temporary directory are made in SetUpTestSuite.
const std::map<std::string, fs::path>& paths() {
  static const std::map<std::string, fs::path> p = [] {
    const fs::path dir = testing::temp_path("exit-codes");
    return std::map<std::string, fs::path>{
        {"tiny", testing::fixtures_dir() / "tiny-llama.gguf"},
        {"tiny_q4", testing::fixtures_dir() / "tiny-llama-Q4_0.gguf"},
        {"zoo_draft", testing::models_dir() / "zoo-draft-f16.gguf"},
        {"zoo_target", testing::models_dir() / "zoo-target-f16.gguf"},
        {"zoo_eagle3", testing::source_dir() / "models" / "zoo-target-eagle3-f16.gguf"},
        {"zoo_dflash", testing::source_dir() / "models" / "zoo-target-dflash-f16.gguf"},
        {"tiny_dflash", testing::source_dir() / "tests" / "data" / "drafters" / "tiny-dflash.gguf"},
        {"prompts", testing::models_dir() / "prompts-code.jsonl"},
        {"dir", dir},
        {"missing", dir / "missing.gguf"},
        {"missing_text", dir / "missing-prompt.txt"},
        {"truncated", dir / "truncated.gguf"},
        {"not_gguf", dir / "not-gguf.gguf"},
        {"unknown_arch", dir / "unknown-arch.gguf"},
        {"moe", dir / "moe.gguf"},
        {"blocks_2to31", dir / "blocks-2to31.gguf"},
        {"blocks_2to22", dir / "blocks-2to22.gguf"},
        {"bad_prompts", dir / "bad-prompts.jsonl"},
        {"out", dir / "out.bin"},
        {"clean", dir / "clean.json"},
        {"violating", dir / "violating.json"},
        {"missing_report", dir / "missing.json"},
        {"not_json", dir / "not-json.json"},
        {"empty", dir / "empty.json"},
    };
  }();
  return p;
}

std::string expand(std::string text, bool quoted) {
  for (const auto& [name, path] : paths()) {
    const std::string token = "{" + name + "}";
    for (size_t at; (at = text.find(token)) != std::string::npos;) {
      text.replace(at, token.size(), quoted ? quote(path) : path.string());
    }
  }
  return text;
}

gguf::Value u32(uint32_t v) {
  return gguf::Value{gguf::ValueType::UINT32, uint64_t{v}};
}

std::vector<ExitCase> exit_cases() {
  const std::string r = "--prompt-ids 1,2 -n 2 -t 1";
  return {
      // ---- 0: ok, help and version ----
      {"Help", "--help", 0, {}, {"run", "bench"}},
      {"SubcommandHelp", "run --help", 0, {}, {"--model"}},
      {"NestedSubcommandHelp", "bench check --help", 0, {}, {"reports"}},
      {"Version", "--version", 0, {}, {"augur"}},
      {"RunOk", "run -m {tiny} " + r, 0, {}, {}},

      // ---- 2: unknown option, for every subcommand ----
      {"RunUnknownOption", "run -m {tiny} " + r + " --bogus", 2, {"invalid argument", "--bogus"}},
      {"LogitsUnknownOption",
       "logits -m {tiny} --prompt-ids 1 --out {out} --bogus",
       2,
       {"invalid argument", "--bogus"}},
      {"TokenizeUnknownOption",
       "tokenize -m {tiny} -p hi --bogus",
       2,
       {"invalid argument", "--bogus"}},
      {"QuantizeUnknownOption",
       "quantize {tiny} {out} Q8_0 --bogus",
       2,
       {"invalid argument", "--bogus"}},
      {"BenchRunUnknownOption",
       "bench run -m {tiny} --prompts {prompts} --out {out} --bogus",
       2,
       {"invalid argument", "--bogus"}},
      {"BenchVerifyCurveUnknownOption",
       "bench verify-curve -m {tiny} --out {out} --bogus",
       2,
       {"invalid argument", "--bogus"}},
      {"BenchRooflineUnknownOption",
       "bench roofline -m {tiny} --bogus",
       2,
       {"invalid argument", "--bogus"}},
      {"BenchCheckUnknownOption",
       "bench check {clean} --bogus",
       2,
       {"invalid argument", "--bogus"}},

      // ---- 2: missing subcommand or required option ----
      {"NoSubcommand", "", 2, {"invalid argument", "subcommand"}},
      {"BenchWithoutSubcommand", "bench", 2, {"invalid argument", "subcommand"}},
      {"RunWithoutModel", "run " + r, 2, {"invalid argument", "--model is required"}},
      {"RunWithoutPrompt", "run -m {tiny}", 2, {"invalid argument", "no prompt"}},
      {"LogitsWithoutOut",
       "logits -m {tiny} --prompt-ids 1",
       2,
       {"invalid argument", "--out is required"}},
      {"TokenizeWithoutModel", "tokenize -p hi", 2, {"invalid argument", "--model is required"}},
      {"QuantizeWithoutType", "quantize {tiny} {out}", 2, {"invalid argument", "type is required"}},
      {"BenchRunWithoutPrompts",
       "bench run -m {tiny} --out {out}",
       2,
       {"invalid argument", "--prompts is required"}},
      {"BenchVerifyCurveWithoutOut",
       "bench verify-curve -m {tiny}",
       2,
       {"invalid argument", "--out is required"}},
      {"BenchRooflineWithoutModel",
       "bench roofline",
       2,
       {"invalid argument", "--model is required"}},
      {"BenchCheckWithoutReports", "bench check", 2, {"invalid argument", "reports is required"}},

      // ---- 2: not a number ----
      {"RunBadCount", "run -m {tiny} --prompt-ids 1 -n many", 2, {"invalid argument", "many"}},
      {"RunBadFloat", "run -m {tiny} " + r + " --temp hot", 2, {"invalid argument", "hot"}},
      {"RunBadTokenId", "run -m {tiny} --prompt-ids 1,x", 2, {"invalid argument", "'x'"}},
      {"LogitsBadNumber",
       "logits -m {tiny} --prompt-ids 1 --out {out} --ubatch x",
       2,
       {"invalid argument", "--ubatch"}},
      {"QuantizeBadNumber",
       "quantize {tiny} {out} Q8_0 -t x",
       2,
       {"invalid argument", "--threads"}},
      {"BenchRunBadNumber",
       "bench run -m {tiny} --prompts {prompts} --out {out} --repeats x",
       2,
       {"invalid argument", "--repeats"}},
      {"BenchVerifyCurveBadList",
       "bench verify-curve -m {tiny} --out {out} --ctx 256,abc",
       2,
       {"invalid argument", "'abc'"}},
      {"BenchRooflineBadList", "bench roofline -m {tiny} -t 1,x", 2, {"invalid argument", "'x'"}},

      // ---- 2: out of range ----
      {"RunThreadsZero", "run -m {tiny} --prompt-ids 1 -t 0", 2, {"invalid argument", "--threads"}},
      {"RunContextZero",
       "run -m {tiny} --prompt-ids 1 -c 0",
       2,
       {"invalid argument", "--ctx-size"}},
      {"RunTopPAboveOne", "run -m {tiny} " + r + " --top-p 1.5", 2, {"invalid argument", "top_p"}},
      {"RunTokenIdOutsideTheVocabulary",
       "run -m {tiny} --prompt-ids 1,99999",
       2,
       {"invalid argument", "99999"}},
      {"RunDraftMaxTooLarge",
       "run -m {tiny} " + r + " --draft ngram --draft-max 33",
       2,
       {"invalid argument", "--draft-max 33"}},
      {"RunUnknownAcceptRule",
       "run -m {tiny} " + r + " --accept greedy",
       2,
       {"invalid argument", "--accept", "greedy", "block,token"}},
      {"BenchRunUnknownArmAcceptRule",
       "bench run -m {tiny} --prompts {prompts} --out {out} --arms ar,spec:ngram:4@fast",
       2,
       {"invalid argument", "@fast", "token or block"}},
      {"QuantizeUnknownType", "quantize {tiny} {out} Q3_K", 2, {"invalid argument", "Q3_K"}},
      {"BenchRunNoRepeats",
       "bench run -m {tiny} --prompts {prompts} --out {out} --repeats 0",
       2,
       {"invalid argument", "--repeats"}},
      {"BenchVerifyCurveMaxMTooLarge",
       "bench verify-curve -m {tiny} --out {out} --max-m 65",
       2,
       {"invalid argument", "--max-m"}},
      {"BenchRooflineNoThreads",
       "bench roofline -m {tiny} -t 0",
       2,
       {"invalid argument", "--threads"}},

      // ---- 2: unknown subcommand ----
      {"UnknownSubcommand", "frobnicate", 2, {"invalid argument", "'frobnicate'"}},
      {"UnknownBenchSubcommand", "bench frobnicate", 2, {"invalid argument", "'frobnicate'"}},

      // ---- 2: options that contradict each other ----
      {"PromptTextAndIds",
       "run -m {tiny} -p hi --prompt-ids 1",
       2,
       {"invalid argument", "--prompt-ids"}},
      {"NgramDraftWithDraftModel",
       "run -m {tiny} " + r + " --draft ngram -md {tiny}",
       2,
       {"invalid argument", "--draft ngram"}},
      {"DFlashDraftWithoutFile",
       "run -m {tiny} " + r + " --draft dflash",
       2,
       {"invalid argument", "--draft dflash needs", "-md FILE"}},
      {"DFlashDraftWithAnEagle3Head",
       "run -m {zoo_target} " + r + " --draft dflash -md {zoo_eagle3}",
       2,
       {"invalid argument", "architecture is 'eagle3'", "--draft dflash needs"}},
      {"Eagle3DraftWithADFlashDrafter",
       "run -m {zoo_target} " + r + " --draft eagle3 -md {zoo_dflash}",
       2,
       {"invalid argument", "architecture is 'dflash'", "--draft eagle3 needs"}},
      {"ModelDraftWithADFlashDrafter",
       "run -m {zoo_target} " + r + " --draft model -md {zoo_dflash}",
       2,
       {"invalid argument", "drafter head (dflash)", "--draft dflash"}},
      {"MtpDraftWithAFile",
       "run -m {tiny} " + r + " --draft mtp -md {tiny}",
       2,
       {"invalid argument", "-md/--model-draft is only used with", "not --draft mtp"}},
      {"DFlashDrafterForAnotherTarget",
       "run -m {zoo_target} " + r + " --draft dflash -md {tiny_dflash}",
       2,
       {"invalid argument", "32 wide", "hidden size is 512"}},

      // ---- 1: a file that does not exist ----
      {"RunMissingModel", "run -m {missing} " + r, 1, {"error", "{missing}"}},
      {"LogitsMissingModel",
       "logits -m {missing} --prompt-ids 1 --out {out}",
       1,
       {"error", "{missing}"}},
      {"TokenizeMissingModel", "tokenize -m {missing} -p hi", 1, {"error", "{missing}"}},
      {"QuantizeMissingModel", "quantize {missing} {out} Q8_0", 1, {"error", "{missing}"}},
      {"BenchRunMissingModel",
       "bench run -m {missing} --prompts {prompts} --out {out}",
       1,
       {"error", "{missing}"}},
      {"BenchVerifyCurveMissingModel",
       "bench verify-curve -m {missing} --out {out}",
       1,
       {"error", "{missing}"}},
      {"BenchRooflineMissingModel", "bench roofline -m {missing}", 1, {"error", "{missing}"}},
      {"RunMissingPromptFile",
       "run -m {tiny} -f {missing_text} -n 2",
       1,
       {"error", "{missing_text}"}},

      // ---- 1: a truncated or malformed file ----
      {"RunTruncatedModel", "run -m {truncated} " + r, 1, {"error", "{truncated}", "at byte"}},
      {"LogitsTruncatedModel",
       "logits -m {truncated} --prompt-ids 1 --out {out}",
       1,
       {"error", "{truncated}", "at byte"}},
      {"TokenizeTruncatedModel",
       "tokenize -m {truncated} -p hi",
       1,
       {"error", "{truncated}", "at byte"}},
      {"QuantizeTruncatedModel",
       "quantize {truncated} {out} Q8_0",
       1,
       {"error", "{truncated}", "at byte"}},
      {"BenchRunTruncatedModel",
       "bench run -m {truncated} --prompts {prompts} --out {out}",
       1,
       {"error", "{truncated}", "at byte"}},
      {"BenchVerifyCurveTruncatedModel",
       "bench verify-curve -m {truncated} --out {out}",
       1,
       {"error", "{truncated}", "at byte"}},
      {"BenchRooflineTruncatedModel",
       "bench roofline -m {truncated}",
       1,
       {"error", "{truncated}", "at byte"}},
      {"RunNotAGgufFile", "run -m {not_gguf} " + r, 1, {"error", "{not_gguf}", "bad magic"}},
      {"BenchRunPromptsNotJsonl",
       "bench run -m {tiny} --prompts {bad_prompts} --out {out}",
       1,
       {"error", "{bad_prompts}:1"}},
      // Hostile metadata: the file, the key and the expectation, in bounded memory.
      {"RunBlockCount2To31",
       "run -m {blocks_2to31} " + r,
       1,
       {"error",
        "{blocks_2to31}: llama.block_count is 2147483648, but the file has tensors for 4 "
        "blocks (blk.0..blk.3)"},
       {},
       true},
      {"RunBlockCount2To22",
       "run -m {blocks_2to22} " + r,
       1,
       {"error",
        "{blocks_2to22}: llama.block_count is 4194304, but the file has tensors for 4 "
        "blocks (blk.0..blk.3)"},
       {},
       true},
      {"BenchRooflineBlockCount2To31",
       "bench roofline -m {blocks_2to31}",
       1,
       {"error", "{blocks_2to31}: llama.block_count is 2147483648"},
       {},
       true},

      // ---- 3: unsupported model or option ----
      {"RunUnknownArchitecture",
       "run -m {unknown_arch} " + r,
       3,
       {"unsupported", "{unknown_arch}", "'mamba9'"}},
      {"RunMixtureOfExperts",
       "run -m {moe} " + r,
       3,
       {"unsupported", "{moe}: llama.expert_count is 8"},
       {},
       true},
      {"MtpDraftOnATargetWithoutOne",
       "run -m {tiny} " + r + " --draft mtp",
       3,
       {"unsupported", "nextn_predict_layers"}},
      {"RunDraftModelWithAnotherVocabulary",
       "run -m {zoo_draft} -p hi -n 2 -t 1 -md {tiny}",
       3,
       {"unsupported", "vocabulary", "{tiny}"}},
      {"QuantizeAQuantizedModel",
       "quantize {tiny_q4} {out} Q8_0",
       3,
       {"unsupported", "already quantized"}},

      // ---- bench check: 0 clean, 4 violation, 1 unreadable; the worst verdict wins ----
      {"CheckCleanReport", "bench check {clean}", 0, {}, {"{clean}: ok"}},
      {"CheckViolatingReport", "bench check {violating}", 4, {}, {"{violating}: ", "violation"}},
      {"CheckMissingReport", "bench check {missing_report}", 1, {"{missing_report}: cannot read"}},
      {"CheckNonJsonReport", "bench check {not_json}", 1, {"{not_json}: not a JSON report"}},
      {"CheckEmptyReport", "bench check {empty}", 1, {"{empty}: not a JSON report"}},
      {"CheckCleanAndViolatingReports",
       "bench check {clean} {violating}",
       4,
       {},
       {"{clean}: ok", "{violating}: "}},
      {"CheckViolatingAndMissingReports",
       "bench check {violating} {missing_report}",
       1,
       {"{missing_report}: cannot read"},
       {"{violating}: "}},
  };
}

class ExitCodes : public ::testing::TestWithParam<ExitCase> {
 protected:
  static void SetUpTestSuite() {
    const auto& p = paths();
    fs::create_directories(p.at("dir"));
    // A Q4_0 model cut in half.
    fs::copy_file(p.at("tiny_q4"), p.at("truncated"));
    fs::resize_file(p.at("truncated"), fs::file_size(p.at("tiny_q4")) / 2);
    std::ofstream(p.at("not_gguf")) << "hello, I am not a model\n";
    std::ofstream(p.at("bad_prompts")) << "this line is not JSON\n";
    rewrite(p.at("unknown_arch"),
            [](auto& e) { e.string_overrides["general.architecture"] = "mamba9"; });
    rewrite(p.at("moe"), [](auto& e) { e.value_overrides["llama.expert_count"] = u32(8); });
    rewrite(p.at("blocks_2to31"), [](auto& e) {
      e.value_overrides["llama.block_count"] =
          gguf::Value{gguf::ValueType::UINT64, uint64_t{1} << 31};
    });
    rewrite(p.at("blocks_2to22"),
            [](auto& e) { e.value_overrides["llama.block_count"] = u32(1u << 22); });
    // Reports: a valid one (as the harness writes it), and the same with its first speed claim
    // doubled, so the claim is no longer the ratio of the medians its samples show.
    auto report = testing::valid_run_report();
    std::ofstream(p.at("clean")) << report.dump();
    auto& speedup = report["summary"]["speedups"][0]["value"];
    speedup = 2 * speedup.get<double>();
    std::ofstream(p.at("violating")) << report.dump();
    std::ofstream(p.at("not_json")) << "{\"schema\": \"augur.bench/1\", not json";
    std::ofstream(p.at("empty")) << "";
  }
  static void TearDownTestSuite() { fs::remove_all(paths().at("dir")); }

  template <typename Edit>
  static void rewrite(const fs::path& to, Edit edit) {
    testing::GgufEdit e;
    edit(e);
    testing::rewrite_gguf(paths().at("tiny"), to, e);
  }
};

TEST_P(ExitCodes, ExitWithTheDocumentedCodeAndNameTheProblem) {
  const ExitCase& c = GetParam();
  const std::string cap = c.capped ? testing::shell_memory_cap(kHostileCap) : "";
  const auto r = testing::run_command(cap + quote(testing::augur_bin()) + " " +
                                      expand(c.args, /*quoted=*/true));
  EXPECT_EQ(r.exit_code, c.code) << "stderr: " << r.err << "\nstdout: " << r.out;
  for (const auto& part : c.err) {
    const auto want = expand(part, /*quoted=*/false);
    EXPECT_NE(r.err.find(want), std::string::npos) << "'" << want << "' not in stderr: " << r.err;
  }
  for (const auto& part : c.out) {
    const auto want = expand(part, /*quoted=*/false);
    EXPECT_NE(r.out.find(want), std::string::npos) << "'" << want << "' not in stdout: " << r.out;
  }
  // Errors say which kind they are, as main prints them (bench check's verdicts are its output).
  if (c.code == 1 && !c.args.starts_with("bench check")) {
    EXPECT_NE(r.err.find("augur: error: "), std::string::npos) << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Cli, ExitCodes, ::testing::ValuesIn(exit_cases()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace augur
