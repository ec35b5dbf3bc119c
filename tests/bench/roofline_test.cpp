// `augur bench roofline`: the bytes a decode step reads and the flops of a prefill (checked against
// the GGUF metadata, computed here independently), the roofline arithmetic, the stream-read
// kernel, the gate's SCHEMA checks for kind "roofline" (a clean report passes, planted defects
// fail), a small in-process run with prefill and a short CLI run. Behaviour only: no timing
// thresholds.
#include "bench/roofline.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "bench/evidence_gate.h"
#include "bench/statistics.h"
#include "common/error.h"
#include "model/model.h"
#include "support/gguf_rewrite.h"
#include "support/reference.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using testing::quote;

std::filesystem::path q8_target() {
  return testing::models_dir() / "zoo-target-q8_0.gguf";
}

// Weight bytes as the issue defines them, straight from the file: every tensor's bytes, but only
// one row (bytes / rows) of token_embd while the file has a separate output matrix.
int64_t expected_weight_bytes(const gguf::File& file) {
  const bool tied = file.find_tensor("output.weight") == nullptr;
  int64_t sum = 0;
  for (const auto& t : file.tensors()) {
    const auto bytes = static_cast<int64_t>(t.n_bytes);
    sum += (t.name == "token_embd.weight" && !tied) ? bytes / t.ne[1] : bytes;
  }
  return sum;
}

// K and V of ctx positions in every layer, F32, from the llama metadata keys.
int64_t expected_kv_bytes(const gguf::File& file, int64_t ctx) {
  const int64_t n_layer = file.get_int("llama.block_count");
  const int64_t n_head = file.get_int("llama.attention.head_count");
  const int64_t n_head_kv = file.get_int("llama.attention.head_count_kv");
  const int64_t head_dim = file.get_int("llama.embedding_length") / n_head;
  return 2 * n_layer * n_head_kv * head_dim * 4 * ctx;
}

// Prefill flops from the llama metadata alone: per layer, Q and O (n_embd x n_embd), K and V
// (n_embd x kv_dim), gate, up and down (n_embd x n_ff) for every token; the output matrix
// (n_embd x n_vocab) for each logit row; QK^T and PV, 2 x 2 x q_dim per causal (query, key) pair.
int64_t expected_prefill_flops(const gguf::File& file, int64_t n, int64_t logit_rows) {
  const int64_t n_embd = file.get_int("llama.embedding_length");
  const int64_t n_ff = file.get_int("llama.feed_forward_length");
  const int64_t n_layer = file.get_int("llama.block_count");
  const int64_t n_head = file.get_int("llama.attention.head_count");
  const int64_t n_head_kv = file.get_int("llama.attention.head_count_kv");
  const auto n_vocab = static_cast<int64_t>(file.get_string_array("tokenizer.ggml.tokens").size());
  const int64_t kv_dim = n_embd / n_head * n_head_kv;
  const int64_t per_layer = 2 * n_embd * n_embd + 2 * n_embd * kv_dim + 3 * n_embd * n_ff;
  return 2 * n * n_layer * per_layer + 2 * logit_rows * n_embd * n_vocab +
         4 * n_layer * n_embd * (n * (n + 1) / 2);
}

json failing_rules(const json& report) {
  json rules = json::array();
  for (const auto& v : check_report(report)) rules.push_back(v.rule);
  return rules;
}

TEST(RooflineBytes, Q8TargetStepReadsEveryTensorOnceAndOneEmbeddingRow) {
  const auto model = model::load_model(q8_target());
  const gguf::File& file = model->file();
  ASSERT_NE(file.find_tensor("output.weight"), nullptr) << "the zoo target has an untied output";
  constexpr int64_t kCtx = 256;
  const StepBytes step = decode_step_bytes(file, model->hparams(), kCtx);
  EXPECT_EQ(step.weight_bytes, expected_weight_bytes(file));
  EXPECT_EQ(step.kv_bytes, expected_kv_bytes(file, kCtx));
  EXPECT_EQ(step.total(), expected_weight_bytes(file) + expected_kv_bytes(file, kCtx));
  // Less than every tensor in full: the step reads one embedding row, not the whole matrix.
  int64_t all_tensors = 0;
  for (const auto& t : file.tensors()) all_tensors += static_cast<int64_t>(t.n_bytes);
  EXPECT_LT(step.weight_bytes, all_tensors);
}

TEST(RooflineBytes, TiedEmbeddingIsReadWholeAsTheOutputMatrix) {
  const auto tied_path = testing::temp_path("tied.gguf");
  testing::rewrite_gguf(q8_target(), tied_path, {.drop_tensors = {"output.weight"}});
  const auto tied = gguf::File::open(tied_path);
  const auto untied = gguf::File::open(q8_target());
  const auto& embd = untied->tensor("token_embd.weight");
  const auto& output = untied->tensor("output.weight");
  // Dropping output.weight removes its bytes and adds the rest of token_embd.
  EXPECT_EQ(decode_weight_bytes(*tied), decode_weight_bytes(*untied) -
                                            static_cast<int64_t>(output.n_bytes) +
                                            static_cast<int64_t>(embd.n_bytes) -
                                            static_cast<int64_t>(embd.n_bytes) / embd.ne[1]);
  EXPECT_EQ(decode_weight_bytes(*tied), expected_weight_bytes(*tied));
  std::filesystem::remove(tied_path);
}

TEST(RooflineBytes, KvBytesGrowLinearlyWithContext) {
  model::HParams hp;
  hp.n_layer = 8;
  hp.n_head_kv = 4;
  hp.head_dim = 64;
  EXPECT_EQ(kv_read_bytes(hp, 0), 0);
  EXPECT_EQ(kv_read_bytes(hp, 1), 2 * 8 * 4 * 64 * 4);
  EXPECT_EQ(kv_read_bytes(hp, 300), 300 * kv_read_bytes(hp, 1));
}

TEST(PrefillFlops, Q8TargetCountsMatmulsPerTokenOutputPerLogitRowAndCausalAttention) {
  const auto model = model::load_model(q8_target());
  const gguf::File& file = model->file();
  for (int64_t n : {1, 16, 512}) {
    EXPECT_EQ(prefill_flops(file, model->hparams(), n), expected_prefill_flops(file, n, 1))
        << "n = " << n;
    EXPECT_EQ(prefill_flops(file, model->hparams(), n, n), expected_prefill_flops(file, n, n))
        << "n = " << n;
  }
}

TEST(PrefillFlops, TiedEmbeddingCountsAsTheOutputMatrix) {
  const auto tied_path = testing::temp_path("tied-flops.gguf");
  testing::rewrite_gguf(q8_target(), tied_path, {.drop_tensors = {"output.weight"}});
  const auto tied = model::load_model(tied_path);
  const auto untied = model::load_model(q8_target());
  // token_embd has the output matrix's shape, so dropping output.weight changes nothing, while an
  // untied token_embd (a row lookup) is not counted at all.
  EXPECT_EQ(prefill_flops(tied->file(), tied->hparams(), 64),
            prefill_flops(untied->file(), untied->hparams(), 64));
  EXPECT_EQ(prefill_flops(tied->file(), tied->hparams(), 64),
            expected_prefill_flops(tied->file(), 64, 1));
  std::filesystem::remove(tied_path);
}

TEST(RooflineArithmetic, RooflineIsBandwidthOverBytesPerStep) {
  EXPECT_DOUBLE_EQ(roofline_tok_s(10.0, 20'000'000), 500.0);  // 10e9 B/s / 20e6 B
  EXPECT_DOUBLE_EQ(roofline_tok_s(3.5, 7'000'000), 3.5e9 / 7e6);
}

TEST(RooflineArithmetic, FractionIsAchievedOverRoofline) {
  EXPECT_DOUBLE_EQ(roofline_fraction(250.0, 500.0), 0.5);
  EXPECT_DOUBLE_EQ(roofline_fraction(600.0, 500.0), 1.2);  // above the roofline is reported as is
  EXPECT_EQ(roofline_fraction(100.0, 0.0), 0.0);
}

TEST(StreamSum, SumsEveryElementIncludingTheTail) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{1000}}) {
    std::vector<float> values(n);
    for (size_t pos = 0; pos < n; ++pos) values[pos] = static_cast<float>(pos % 7);  // exact sums
    const double expected = std::accumulate(values.begin(), values.end(), 0.0);
    EXPECT_EQ(stream_sum(values), static_cast<float>(expected)) << "n = " << n;
  }
}

TEST(ReadBandwidth, GivesOnePositiveFigurePerSample) {
  kernels::ThreadPool pool(2);
  const std::vector<float> buffer(1 << 16, 1.0f);
  const auto gb_s = measure_read_bandwidth(pool, buffer, 3, 1 << 20);
  ASSERT_EQ(gb_s.size(), 3u);
  for (double g : gb_s) EXPECT_TRUE(std::isfinite(g) && g > 0) << g;
}

// A tiny in-process run: the fixture model, one or two threads, small buffers and counts.
RooflineConfig tiny_config() {
  RooflineConfig config;
  config.model_path = (testing::fixtures_dir() / "tiny-llama.gguf").string();
  config.threads = {1, 2};
  config.ctx = 8;
  config.n_gen = 4;
  config.repeats = 2;
  config.warmup = 0;
  config.bandwidth_mib = 1;
  config.bandwidth_repeats = 1;
  config.l3_bytes = 0;
  config.prefill_tokens = 16;
  config.peak_repeats = 3;
  config.peak_fmas_per_thread = 1 << 20;
  return config;
}

TEST(RunRoofline, TinyModelReportsPrefillAgainstPeakAndPassesTheGate) {
  const RooflineConfig config = tiny_config();
  const json r = run_roofline(config);
  EXPECT_EQ(format_violations(check_report(r)), "");
  EXPECT_EQ(r["config"]["prefill_tokens"], 16);
  const auto model = model::load_model(config.model_path);
  const int64_t flops = expected_prefill_flops(model->file(), 16, 1);
  EXPECT_EQ(r["prefill_flops"].get<int64_t>(), flops);
  ASSERT_EQ(r["points"].size(), 2u);
  for (const auto& p : r["points"]) {
    const auto tok_s = p["samples_prefill_tok_s"].get<std::vector<double>>();
    const auto peak = p["samples_peak_gflop_s"].get<std::vector<double>>();
    ASSERT_EQ(tok_s.size(), 2u);  // repeats, warm-ups excluded
    ASSERT_EQ(peak.size(), 3u);   // peak_repeats
    for (double v : tok_s) EXPECT_GT(v, 0);
    for (double v : peak) EXPECT_GT(v, 0);
    EXPECT_DOUBLE_EQ(p["prefill_tok_s_median"].get<double>(), median(tok_s));
    EXPECT_EQ(p["prefill_tok_s"], spread(tok_s));
    EXPECT_DOUBLE_EQ(p["peak_gflop_s"].get<double>(), median(peak));
    EXPECT_DOUBLE_EQ(p["prefill_gflop_s"].get<double>(),
                     static_cast<double>(flops) / 16 * median(tok_s) / 1e9);
    EXPECT_DOUBLE_EQ(p["prefill_peak_fraction"].get<double>(),
                     p["prefill_gflop_s"].get<double>() / median(peak));
    EXPECT_GT(p["decode_tok_s_median"].get<double>(), 0);  // decoding still measured
  }
}

TEST(RunRoofline, PrefillZeroMeasuresNeitherPrefillNorPeak) {
  RooflineConfig config = tiny_config();
  config.threads = {1};
  config.prefill_tokens = 0;
  const json r = run_roofline(config);
  EXPECT_EQ(format_violations(check_report(r)), "");
  EXPECT_FALSE(r.contains("prefill_flops"));
  ASSERT_EQ(r["points"].size(), 1u);
  for (const char* key : {"prefill_tok_s_median", "peak_gflop_s", "prefill_peak_fraction"}) {
    EXPECT_FALSE(r["points"][0].contains(key)) << key;
  }
}

TEST(RunRoofline, PrefillBeyondTheTrainingContextIsRejectedNamingPrefill) {
  RooflineConfig config = tiny_config();
  const auto file = gguf::File::open(config.model_path);
  const int64_t n_ctx_train = file->get_int("llama.context_length");
  config.prefill_tokens = n_ctx_train + 1;
  try {
    (void)run_roofline(config);
    FAIL() << "a prefill of " << config.prefill_tokens << " tokens was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(std::string(e.what()),
                ::testing::HasSubstr(fmt::format("--prefill {}", n_ctx_train + 1)));
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(std::to_string(n_ctx_train)));
  }
}

TEST(RunRoofline, PrefillAtTheTrainingContextIsTimed) {
  // The default --ctx (256) is below a 512-token prefill: the prefill gets a cache of its own.
  RooflineConfig config = tiny_config();
  config.model_path = q8_target().string();
  config.threads = {1};
  config.repeats = 1;
  config.prefill_tokens = gguf::File::open(q8_target())->get_int("llama.context_length");
  const json r = run_roofline(config);
  EXPECT_EQ(format_violations(check_report(r)), "");
  EXPECT_EQ(r["points"][0]["samples_prefill_tok_s"].size(), 1u);
}

// One short real run through the CLI (in-cache regime forced with --l3-mib), shared by the tests.
class ShortRoofline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::temp_path("roofline"));
    std::filesystem::create_directories(*dir_);
    result_ = new testing::CommandResult(testing::run_command(
        quote(testing::augur_bin()) + " bench roofline -m " + quote(q8_target()) +
        " -t 1 --ctx 16 --n-gen 8 --repeats 2 --warmup 0 --bandwidth-mib 64 "
        "--bandwidth-repeats 2 --l3-mib 64 --prefill 16 --peak-repeats 2 --out " +
        quote(*dir_ / "roofline.json")));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete result_;
  }
  static json report() { return testing::read_json(*dir_ / "roofline.json"); }

  static std::filesystem::path* dir_;
  static testing::CommandResult* result_;
};
std::filesystem::path* ShortRoofline::dir_ = nullptr;
testing::CommandResult* ShortRoofline::result_ = nullptr;

TEST_F(ShortRoofline, ExitsZeroAndWritesARooflineReport) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  const json r = report();
  EXPECT_EQ(r["schema"], "augur.bench/1");
  EXPECT_EQ(r["kind"], "roofline");
  EXPECT_EQ(r["config"]["threads"], json::array({1}));
  EXPECT_EQ(r["config"]["ctx"], 16);
  EXPECT_NE(result_->out.find("roofline regime: in_cache"), std::string::npos) << result_->out;
  EXPECT_EQ(r["config"]["prefill_tokens"], 16);
  EXPECT_NE(result_->out.find("prefill 16 tokens"), std::string::npos) << result_->out;
  EXPECT_NE(result_->out.find("prefill t/s"), std::string::npos) << result_->out;
}

TEST_F(ShortRoofline, ReportsStepBytesFromTheModelFile) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  const json r = report();
  const auto file = gguf::File::open(q8_target());
  EXPECT_EQ(r["weight_bytes"].get<int64_t>(), expected_weight_bytes(*file));
  EXPECT_EQ(r["kv_bytes"].get<int64_t>(), expected_kv_bytes(*file, 16));
  EXPECT_EQ(r["bytes_per_step"].get<int64_t>(),
            expected_weight_bytes(*file) + expected_kv_bytes(*file, 16));
}

TEST_F(ShortRoofline, MeasuresBothRegimesAndDerivesEachPointFromThem) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  const json r = report();
  ASSERT_EQ(r["regime"], "in_cache");  // 64 MiB "L3" holds the q8_0 step's ~30 MB
  ASSERT_EQ(r["bandwidth"].size(), 2u);
  std::map<std::string, double> gb_s;
  for (const auto& b : r["bandwidth"]) gb_s[b["regime"]] = b["gb_s_median"].get<double>();
  ASSERT_TRUE(gb_s.contains("dram") && gb_s.contains("in_cache"));
  ASSERT_EQ(r["points"].size(), 1u);
  const auto& p = r["points"][0];
  const auto bytes = r["bytes_per_step"].get<int64_t>();
  EXPECT_DOUBLE_EQ(p["roofline_tok_s"].get<double>(), gb_s["in_cache"] * 1e9 / bytes);
  EXPECT_DOUBLE_EQ(p["roofline_tok_s_by_regime"]["dram"].get<double>(), gb_s["dram"] * 1e9 / bytes);
  EXPECT_DOUBLE_EQ(p["fraction"].get<double>(),
                   p["decode_tok_s_median"].get<double>() / p["roofline_tok_s"].get<double>());
  EXPECT_GT(p["decode_tok_s_median"].get<double>(), 0);
}

TEST_F(ShortRoofline, ReportPassesTheGate) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  EXPECT_EQ(format_violations(check_report(report())), "");
  const auto check = testing::run_command(quote(testing::augur_bin()) + " bench check " +
                                          quote(*dir_ / "roofline.json"));
  EXPECT_EQ(check.exit_code, 0) << check.out;
}

TEST_F(ShortRoofline, PlantedDefectsFailWithSchema) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  const json clean = report();
  const std::vector<std::pair<std::string, std::function<void(json&)>>> defects = {
      {"points missing", [](json& r) { r.erase("points"); }},
      {"bandwidth empty", [](json& r) { r["bandwidth"] = json::array(); }},
      {"unknown regime", [](json& r) { r["regime"] = "l2"; }},
      {"bytes do not add up", [](json& r) { r["kv_bytes"] = r["kv_bytes"].get<int64_t>() + 1; }},
      {"fraction off", [](json& r) { r["points"][0]["fraction"] = 0.999999; }},
      {"roofline off",
       [](json& r) {
         r["points"][0]["roofline_tok_s"] = 2 * r["points"][0]["roofline_tok_s"].get<double>();
       }},
      {"no bandwidth for the point's threads",
       [](json& r) {
         for (auto& b : r["bandwidth"]) b["threads"] = 2;
       }},
      {"decode speed a string", [](json& r) { r["points"][0]["decode_tok_s_median"] = "fast"; }},
      {"config without ctx", [](json& r) { r["config"].erase("ctx"); }},
      {"prefill on without flops", [](json& r) { r.erase("prefill_flops"); }},
      {"peak fraction off", [](json& r) { r["points"][0]["prefill_peak_fraction"] = 0.999999; }},
      {"prefill median off",
       [](json& r) {
         r["points"][0]["prefill_tok_s_median"] =
             2 * r["points"][0]["prefill_tok_s_median"].get<double>();
       }},
      {"peak samples missing", [](json& r) { r["points"][0].erase("samples_peak_gflop_s"); }},
  };
  for (const auto& [name, plant] : defects) {
    json bad = clean;
    plant(bad);
    const json rules = failing_rules(bad);
    ASSERT_FALSE(rules.empty()) << name;
    for (const auto& rule : rules) EXPECT_EQ(rule, "SCHEMA") << name;
  }
}

TEST(RooflineCli, ContextBelowHalfTheGeneratedTokensIsRejected) {
  const auto r = testing::run_command(quote(testing::augur_bin()) + " bench roofline -m " +
                                      quote(q8_target()) + " -t 1 --ctx 4 --n-gen 64");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--ctx 4"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace augur::bench
