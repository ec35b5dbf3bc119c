#include "bench/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "bench/build_info.h"
#include "bench/filler.h"
#include "bench/model_info.h"
#include "bench/statistics.h"
#include "cache/model_cache.h"
#include "common/error.h"
#include "engine/generator.h"
#include "gguf/types.h"
#include "kernels/peak_flops.h"
#include "kernels/peak_int8.h"
#include "kernels/quantize_activations.h"
#include "model/evaluator.h"
#include "model/model.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kKvBytesPerValue = 4;               // the KV cache stores F32
constexpr int64_t kMinCacheSampleBytes = 256 * kMiB;  // an in-cache sample reads at least this
constexpr int64_t kUbatch = 512;

// Four floats in one SSE register (any target with GCC/Clang vector extensions).
using Float4 = float __attribute__((vector_size(16)));

// The 1-minute load average (other processes compete for cores and bandwidth); -1 if unknown.
double load_average_1m() {
  double load[1] = {-1};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

// Keeps stream sums alive so the compiler cannot drop the reads.
std::atomic<float> g_sink{0};

struct BandwidthResult {
  int threads = 0;
  std::string regime;
  int64_t buffer_bytes = 0;
  std::vector<double> gb_s;  // one per sample
};

json bandwidth_json(const BandwidthResult& r) {
  return {{"threads", r.threads},
          {"regime", r.regime},
          {"buffer_bytes", r.buffer_bytes},
          {"gb_s_median", median(r.gb_s)},
          {"gb_s_min", *std::min_element(r.gb_s.begin(), r.gb_s.end())},
          {"gb_s_max", *std::max_element(r.gb_s.begin(), r.gb_s.end())},
          {"samples_gb_s", r.gb_s}};
}

void validate(const RooflineConfig& config, const std::vector<int>& threads) {
  for (int t : threads) {
    if (t < 1 || t > 256) {
      throw InvalidArgument(fmt::format("--threads: {} is out of range, expected 1..256", t));
    }
  }
  if (std::set<int>(threads.begin(), threads.end()).size() != threads.size()) {
    throw InvalidArgument("--threads: a thread count is listed twice");
  }
  if (config.n_gen < 2) {
    throw InvalidArgument(
        fmt::format("--n-gen {}: expected at least 2 (the first token comes "
                    "from the prefill, decode speed needs one more)",
                    config.n_gen));
  }
  if (config.ctx - config.n_gen / 2 < 1 || config.ctx > (int64_t{1} << 20)) {
    throw InvalidArgument(fmt::format(
        "--ctx {}: expected {}..{} (the decode steps average this context, so it must exceed "
        "half of --n-gen {})",
        config.ctx, config.n_gen / 2 + 1, int64_t{1} << 20, config.n_gen));
  }
  if (config.repeats < 1) throw InvalidArgument("--repeats must be at least 1");
  if (config.warmup < 0) throw InvalidArgument("--warmup must be at least 0");
  if (config.bandwidth_repeats < 1) throw InvalidArgument("--bandwidth-repeats must be at least 1");
  if (config.bandwidth_mib < 1 || config.bandwidth_mib > 64 * 1024) {
    throw InvalidArgument(
        fmt::format("--bandwidth-mib {}: expected 1..65536", config.bandwidth_mib));
  }
  if (config.prefill_tokens < 0) {
    throw InvalidArgument(fmt::format(
        "--prefill {}: expected 0 (off) or a token count up to the model's training context",
        config.prefill_tokens));
  }
  if (config.peak_repeats < 1) throw InvalidArgument("--peak-repeats must be at least 1");
  AUGUR_CHECK(config.peak_fmas_per_thread >= 1, "a peak sample runs at least one FMA");
}

// Checked once the model is loaded: a prefill longer than the training context would time a
// forward the model is not meant to run.
void validate_prefill(const RooflineConfig& config, const model::HParams& hp) {
  if (hp.n_ctx_train > 0 && config.prefill_tokens > hp.n_ctx_train) {
    throw InvalidArgument(fmt::format(
        "--prefill {}: exceeds the model's training context of {} tokens (expected 0..{})",
        config.prefill_tokens, hp.n_ctx_train, hp.n_ctx_train));
  }
}

// Prefill tok/s of `warmup + repeats` forwards of `prompt` (logits of the last row) on a cache
// cleared before each; returns the measured runs' figures.
std::vector<double> time_prefill(const model::Model& model, kernels::ThreadPool& pool,
                                 std::span<const int32_t> prompt, int warmup, int repeats,
                                 const std::function<void(int run)>& after_run) {
  const auto n = static_cast<int64_t>(prompt.size());
  cache::ModelCache cache(model, {.capacity = n + 1, .max_batch = kUbatch});
  model::Evaluator eval(model, pool, kUbatch, n + 1);
  std::vector<float> logits(static_cast<size_t>(model.hparams().n_vocab));  // [n_vocab]
  std::vector<double> tok_s;
  for (int run = 0; run < warmup + repeats; ++run) {
    cache.clear();
    const auto start = Clock::now();
    eval.forward_last(prompt, cache.memory(), logits.data());
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (run >= warmup) tok_s.push_back(static_cast<double>(n) / s);
    after_run(run);
  }
  return tok_s;
}

}  // namespace

int64_t decode_weight_bytes(const gguf::File& file) {
  const bool tied = file.find_tensor("output.weight") == nullptr;
  int64_t bytes = 0;
  for (const auto& t : file.tensors()) {
    if (t.name == "token_embd.weight" && !tied) {
      bytes += static_cast<int64_t>(gguf::row_bytes(t.type, t.ne[0]));  // the step's token only
    } else {
      bytes += static_cast<int64_t>(t.n_bytes);
    }
  }
  return bytes;
}

int64_t kv_read_bytes(const model::HParams& hp, int64_t ctx) {
  return 2 * hp.n_layer * hp.n_head_kv * hp.head_dim * kKvBytesPerValue * ctx;
}

int64_t prefill_flops(const gguf::File& file, const model::HParams& hp, int64_t n_tokens,
                      int64_t n_logit_rows) {
  const bool tied = file.find_tensor("output.weight") == nullptr;
  int64_t per_token = 0, output = 0;  // weights (multiply-adds) per token / per logit row
  for (const auto& t : file.tensors()) {
    if (t.ne.size() != 2) continue;  // norms and biases: no matmul
    const int64_t weights = t.ne[0] * t.ne[1];
    if (t.name == "output.weight" || (t.name == "token_embd.weight" && tied)) {
      output += weights;
    } else if (t.name != "token_embd.weight") {  // an untied embedding is a row lookup
      per_token += weights;
    }
  }
  const int64_t causal_pairs = n_tokens * (n_tokens + 1) / 2;  // row i attends to keys 0..i
  return 2 * n_tokens * per_token + 2 * n_logit_rows * output +
         2 * 2 * hp.n_layer * hp.n_head * hp.head_dim * causal_pairs;
}

StepBytes decode_step_bytes(const gguf::File& file, const model::HParams& hp, int64_t ctx) {
  return {decode_weight_bytes(file), kv_read_bytes(hp, ctx)};
}

double roofline_tok_s(double gb_s, int64_t bytes_per_step) {
  AUGUR_CHECK(bytes_per_step > 0, "a decode step reads something");
  return gb_s * 1e9 / static_cast<double>(bytes_per_step);
}

double roofline_fraction(double decode_tok_s, double roofline) {
  return roofline > 0 ? decode_tok_s / roofline : 0.0;
}

float stream_sum(std::span<const float> values) {
  // Eight independent accumulators (32 floats, two cache lines per iteration) so the adds never
  // wait on each other and the loop is bound by loads; written out so -O2 keeps them in registers.
  constexpr size_t kLanes = 4, kStep = 8 * kLanes;
  Float4 a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {}, a6 = {}, a7 = {};
  const float* p = values.data();
  const size_t n = values.size(), n_vec = n - n % kStep;
  auto load = [](const float* at) {
    Float4 v;
    std::memcpy(&v, at, sizeof v);
    return v;
  };
  for (size_t pos = 0; pos < n_vec; pos += kStep) {
    const float* at = p + pos;
    a0 += load(at);
    a1 += load(at + 4);
    a2 += load(at + 8);
    a3 += load(at + 12);
    a4 += load(at + 16);
    a5 += load(at + 20);
    a6 += load(at + 24);
    a7 += load(at + 28);
  }
  const Float4 all = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
  float sum = all[0] + all[1] + all[2] + all[3];
  for (size_t pos = n_vec; pos < n; ++pos) sum += p[pos];
  return sum;
}

std::vector<double> measure_read_bandwidth(kernels::ThreadPool& pool, std::span<const float> buffer,
                                           int repeats, int64_t min_bytes_per_sample) {
  AUGUR_CHECK(!buffer.empty() && repeats >= 1, "a buffer to read and at least one sample");
  const int n_chunks = pool.size();
  const auto n = static_cast<int64_t>(buffer.size());
  const auto buffer_bytes = static_cast<int64_t>(buffer.size_bytes());
  const int64_t passes =
      std::max<int64_t>(1, (min_bytes_per_sample + buffer_bytes - 1) / buffer_bytes);
  std::vector<float> partial(static_cast<size_t>(n_chunks));  // [n_chunks]
  auto pass = [&] {
    pool.parallel_for(n_chunks, [&](int64_t begin, int64_t end) {
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        const int64_t lo = n * chunk / n_chunks, hi = n * (chunk + 1) / n_chunks;
        partial[static_cast<size_t>(chunk)] =
            stream_sum(buffer.subspan(static_cast<size_t>(lo), static_cast<size_t>(hi - lo)));
      }
    });
    float total = 0;
    for (float s : partial) total += s;
    g_sink.store(g_sink.load(std::memory_order_relaxed) + total, std::memory_order_relaxed);
  };
  pass();  // untimed: page in, warm the cache for the in-cache regime
  std::vector<double> gb_s;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    for (int64_t p = 0; p < passes; ++p) pass();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    gb_s.push_back(static_cast<double>(passes * buffer_bytes) / s / 1e9);
  }
  return gb_s;
}

int64_t l3_cache_bytes() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string text;  // e.g. "32768K"
  if (!(in >> text)) return 0;
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  const std::string unit = text.substr(used);
  if (value <= 0) return 0;
  if (unit.empty()) return value;
  if (unit == "K") return value * 1024;
  if (unit == "M") return value * kMiB;
  if (unit == "G") return value * 1024 * kMiB;
  return 0;  // a unit we do not know: better no in-cache regime than a wrong one
}

json run_roofline(const RooflineConfig& config, const RooflineProgress& progress) {
  std::vector<int> threads = config.threads;
  if (threads.empty()) {
    const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    for (int t = 1; t <= hw; ++t) threads.push_back(t);
  }
  validate(config, threads);

  auto model = model::load_model(config.model_path);
  const model::HParams& hp = model->hparams();
  validate_prefill(config, hp);
  const bool prefill = config.prefill_tokens > 0;
  const StepBytes step = decode_step_bytes(model->file(), hp, config.ctx);
  const int64_t l3_bytes = config.l3_bytes >= 0 ? config.l3_bytes : l3_cache_bytes();
  const bool in_cache = l3_bytes > 0 && step.total() <= l3_bytes;
  const std::string regime = in_cache ? "in_cache" : "dram";
  const int64_t dram_bytes = config.bandwidth_mib * kMiB;
  const int64_t prompt_tokens = config.ctx - config.n_gen / 2;
  const int max_threads = *std::max_element(threads.begin(), threads.end());
  const double load_before = load_average_1m();

  json report = {
      {"schema", "augur.bench/1"},  {"kind", "roofline"},
      {"created", utc_timestamp()}, {"machine", machine_info(max_threads)},
      {"build", build_info()},      {"models", json::array({model_info("target", *model)})}};
  report["config"] = {{"threads", threads},
                      {"ctx", config.ctx},
                      {"n_gen", config.n_gen},
                      {"prompt_tokens", prompt_tokens},
                      {"repeats", config.repeats},
                      {"warmup", config.warmup},
                      {"ubatch", kUbatch},
                      {"bandwidth_buffer_bytes", dram_bytes},
                      {"bandwidth_repeats", config.bandwidth_repeats},
                      {"l3_bytes", l3_bytes},
                      {"prefill_tokens", config.prefill_tokens},
                      {"seed", config.seed}};
  if (prefill) {
    report["config"]["peak_repeats"] = config.peak_repeats;
    report["config"]["peak_fmas_per_thread"] = config.peak_fmas_per_thread;
  }
  report["regime"] = regime;
  report["bytes_per_step"] = step.total();
  report["weight_bytes"] = step.weight_bytes;
  report["kv_bytes"] = step.kv_bytes;
  const int64_t flops = prefill ? prefill_flops(model->file(), hp, config.prefill_tokens) : 0;
  if (prefill) report["prefill_flops"] = flops;

  const size_t n_regimes = in_cache ? 2 : 1;
  const size_t runs_per_phase = static_cast<size_t>(config.warmup + config.repeats);
  const size_t total =
      threads.size() * (n_regimes + runs_per_phase + (prefill ? 1 + runs_per_phase : 0));
  size_t done = 0;
  auto tick = [&](const std::string& what) {
    if (progress) progress(++done, total, what);
  };

  // Bandwidth (and peak FMA throughput) first, then free the buffers so they do not sit in memory
  // during decoding.
  std::vector<BandwidthResult> bandwidth;
  std::map<int, std::vector<double>> peak_gflop_s;  // threads -> samples
  // Integer weights (Q8_0/Q4_0 products on int8 activations) are also held to the int8 peak
  // where the path has VNNI.
  bool integer_weights = false;
  for (const auto& t : model->file().tensors()) {
    integer_weights |= t.ne.size() == 2 && kernels::uses_q8_activations(t.type);
  }
  const bool int8_peak =
      prefill && integer_weights && kernels::has_int8_peak(kernels::current_isa());
  std::map<int, std::vector<double>> peak_int8_gop_s;  // threads -> samples
  {
    std::vector<float> dram(static_cast<size_t>(dram_bytes) / sizeof(float), 1.0f);
    std::vector<float> cached;
    if (in_cache) cached.assign(static_cast<size_t>(step.total()) / sizeof(float), 1.0f);
    for (int t : threads) {
      kernels::ThreadPool pool(t);
      bandwidth.push_back(
          {t, "dram", dram_bytes, measure_read_bandwidth(pool, dram, config.bandwidth_repeats, 0)});
      tick(fmt::format("bandwidth dram t{}", t));
      if (in_cache) {
        bandwidth.push_back(
            {t, "in_cache", static_cast<int64_t>(cached.size() * sizeof(float)),
             measure_read_bandwidth(pool, cached, config.bandwidth_repeats, kMinCacheSampleBytes)});
        tick(fmt::format("bandwidth in_cache t{}", t));
      }
      if (prefill) {
        peak_gflop_s[t] =
            kernels::measure_peak_gflop_s(pool, config.peak_repeats, config.peak_fmas_per_thread);
        tick(fmt::format("peak FMA t{}", t));
        if (int8_peak) {
          peak_int8_gop_s[t] = kernels::measure_peak_int8_gop_s(pool, config.peak_repeats,
                                                                config.peak_fmas_per_thread);
        }
      }
    }
  }
  report["bandwidth"] = json::array();
  for (const auto& b : bandwidth) report["bandwidth"].push_back(bandwidth_json(b));

  sampling::SamplerConfig greedy;
  greedy.temperature = 0;
  const sampling::Sampler sampler(greedy, static_cast<int>(hp.n_vocab));
  const auto prompt = filler_tokens(prompt_tokens, hp.n_vocab);
  const auto prefill_prompt = filler_tokens(config.prefill_tokens, hp.n_vocab);
  engine::GenerateOptions options;
  options.n_predict = config.n_gen;
  options.ignore_eos = true;

  report["points"] = json::array();
  for (int t : threads) {
    kernels::ThreadPool pool(t);
    std::vector<double> prefill_tok_s;
    if (prefill) {
      prefill_tok_s =
          time_prefill(*model, pool, prefill_prompt, config.warmup, config.repeats,
                       [&](int run) { tick(fmt::format("prefill t{} run {}", t, run + 1)); });
    }
    engine::Generator gen(*model, pool, prompt_tokens + config.n_gen + 1, kUbatch);
    std::vector<double> decode_tok_s;
    for (int r = 0; r < config.warmup + config.repeats; ++r) {
      gen.reset();  // every run prefills the whole prompt and decodes over the same contexts
      sampling::SeededRng rng(config.seed);
      const auto result = gen.generate(prompt, sampler, rng, options, {});
      if (result.stats.n_gen != config.n_gen) {
        throw Error(fmt::format("roofline decode at {} threads produced {} tokens, expected {}", t,
                                result.stats.n_gen, config.n_gen));
      }
      if (r >= config.warmup) decode_tok_s.push_back(result.stats.decode_tok_s());
      tick(fmt::format("decode t{} run {}", t, r + 1));
    }
    json point = {{"threads", t}, {"regime", regime}};
    json by_regime = json::object(), fraction_by_regime = json::object();
    const double achieved = median(decode_tok_s);
    for (const auto& b : bandwidth) {
      if (b.threads != t) continue;
      const double roof = roofline_tok_s(median(b.gb_s), step.total());
      by_regime[b.regime] = roof;
      fraction_by_regime[b.regime] = roofline_fraction(achieved, roof);
    }
    const double roof = by_regime[regime].get<double>();
    point["roofline_tok_s"] = roof;
    point["decode_tok_s_median"] = achieved;
    point["fraction"] = roofline_fraction(achieved, roof);
    point["decode_tok_s"] = spread(decode_tok_s);
    point["samples_decode_tok_s"] = decode_tok_s;
    point["roofline_tok_s_by_regime"] = by_regime;
    point["fraction_by_regime"] = fraction_by_regime;
    if (prefill) {
      const double tok_s = median(prefill_tok_s);
      const double peak = median(peak_gflop_s[t]);
      // flops per token x median tok/s: the flops over the median time for an odd repeat count.
      const double gflop_s =
          static_cast<double>(flops) / static_cast<double>(config.prefill_tokens) * tok_s / 1e9;
      point["prefill_tok_s_median"] = tok_s;
      point["prefill_tok_s"] = spread(prefill_tok_s);
      point["samples_prefill_tok_s"] = prefill_tok_s;
      point["prefill_gflop_s"] = gflop_s;
      point["peak_gflop_s"] = peak;
      point["samples_peak_gflop_s"] = peak_gflop_s[t];
      point["prefill_peak_fraction"] = gflop_s / peak;
      if (int8_peak) {
        const double int8 = median(peak_int8_gop_s[t]);
        point["peak_int8_gop_s"] = int8;
        point["samples_peak_int8_gop_s"] = peak_int8_gop_s[t];
        point["prefill_int8_fraction"] = gflop_s / int8;
      }
    }
    report["points"].push_back(point);
  }
  report["load_average_1m"] = {{"before", load_before}, {"after", load_average_1m()}};
  report["peak_rss_bytes"] = peak_rss_bytes();
  return report;
}

}  // namespace augur::bench
