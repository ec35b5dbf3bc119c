#include "bench/verify_curve.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <thread>

#include "bench/build_info.h"
#include "bench/filler.h"
#include "bench/model_info.h"
#include "bench/statistics.h"
#include "cache/model_cache.h"
#include "common/error.h"
#include "model/evaluator.h"
#include "model/model.h"
#include "spec/model_drafter.h"
#include "spec/ngram_drafter.h"
#include "spec/vocab_match.h"

namespace augur::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Median, spread and every time of a drafter proposing k tokens after `context`.
json time_drafter(spec::DraftSource& drafter, const std::string& name,
                  const std::vector<int32_t>& context, const sampling::Sampler& sampler,
                  const VerifyCurveConfig& config, int64_t ctx) {
  sampling::SeededRng rng(1);
  spec::Draft draft;
  drafter.reset();
  drafter.begin(std::span<const int32_t>(context.data(), context.size() - 1));
  std::vector<double> per_token;
  for (int r = 0; r < config.warmup + config.repeats; ++r) {
    const auto start = Clock::now();
    drafter.propose({context, config.draft_k, &sampler, &rng}, draft);
    const double s = seconds_since(start);
    drafter.observe(0);  // roll back: every repeat proposes from the same state
    if (r >= config.warmup && !draft.tokens.empty()) {
      per_token.push_back(s / static_cast<double>(draft.tokens.size()));
    }
  }
  json j = {{"name", name}, {"ctx", ctx}, {"k", config.draft_k}};
  if (per_token.empty()) {
    j["proposed"] = false;  // e.g. n-gram lookup found nothing on filler text
  } else {
    j["proposed"] = true;
    j["per_token_s"] = median(per_token);
    j["per_token_spread"] = spread(per_token);
    j["samples_per_token_s"] = per_token;
  }
  return j;
}

}  // namespace

json run_verify_curve(const VerifyCurveConfig& config, const CurveProgress& progress) {
  if (config.max_m < 1 || config.max_m > 64) throw InvalidArgument("--max-m must be in 1..64");
  if (config.repeats < 1) throw InvalidArgument("--repeats must be at least 1");
  if (config.contexts.empty()) throw InvalidArgument("--ctx needs at least one context length");
  for (int64_t c : config.contexts) {
    if (c < 1 || c > (int64_t{1} << 20)) {
      throw InvalidArgument(fmt::format("context length {} is out of range", c));
    }
  }
  auto target = model::load_model(config.target_path);
  std::unique_ptr<model::Model> draft;
  if (!config.draft_path.empty()) {
    draft = model::load_model(config.draft_path);
    spec::check_same_vocabulary(*target, *draft);
  }
  const int threads =
      config.threads > 0 ? config.threads : static_cast<int>(std::thread::hardware_concurrency());
  kernels::ThreadPool pool(std::max(1, threads));
  const int64_t n_vocab = target->hparams().n_vocab;
  const int64_t max_ctx = *std::max_element(config.contexts.begin(), config.contexts.end());
  const int64_t capacity = max_ctx + config.max_m + config.draft_k + 1;

  json report = {
      {"schema", "augur.bench/1"},  {"kind", "verify-curve"},
      {"created", utc_timestamp()}, {"machine", machine_info(pool.size())},
      {"build", build_info()},      {"models", json::array({model_info("target", *target)})}};
  if (draft) report["models"].push_back(model_info("draft", *draft));
  report["config"] = {{"max_m", config.max_m},     {"contexts", config.contexts},
                      {"repeats", config.repeats}, {"warmup", config.warmup},
                      {"threads", pool.size()},    {"draft_k", config.draft_k}};
  report["curve"] = json::array();
  report["drafters"] = json::array();

  const int64_t ubatch = std::max<int64_t>(config.max_m, 64);
  model::Evaluator eval(*target, pool, ubatch, capacity);
  cache::ModelCache cache(*target, {.capacity = capacity, .max_batch = ubatch});
  const auto tokens = filler_tokens(max_ctx + config.max_m, n_vocab);
  std::vector<float> logits(static_cast<size_t>(config.max_m * n_vocab));
  const size_t total = config.contexts.size() * static_cast<size_t>(config.repeats);
  size_t done = 0;
  for (int64_t ctx : config.contexts) {
    cache.clear();
    std::vector<int32_t> positions(static_cast<size_t>(ctx));
    std::iota(positions.begin(), positions.end(), 0);
    eval.forward(std::span<const int32_t>(tokens.data(), static_cast<size_t>(ctx)), positions, {},
                 cache.memory(), nullptr);
    cache.commit(ctx);
    // Every repeat times M = 1..max_m in turn, rather than all repeats of one M before the next:
    // on a shared machine whose memory bandwidth or core speed changes for seconds at a time, a
    // change then falls on every M alike instead of on a few points of the curve, so the ratios
    // to M = 1 compare like with like.
    std::vector<std::vector<double>> times(static_cast<size_t>(config.max_m));
    for (int r = 0; r < config.warmup + config.repeats; ++r) {
      for (int m = 1; m <= config.max_m; ++m) {
        const std::span<const int32_t> rows(tokens.data() + ctx, static_cast<size_t>(m));
        std::vector<int32_t> pos(static_cast<size_t>(m)), out(static_cast<size_t>(m));
        std::iota(pos.begin(), pos.end(), static_cast<int32_t>(ctx));
        std::iota(out.begin(), out.end(), 0);
        const auto start = Clock::now();
        eval.forward(rows, pos, out, cache.memory(), logits.data());
        const double s = seconds_since(start);
        cache.commit(0);
        if (r >= config.warmup) times[static_cast<size_t>(m - 1)].push_back(s);
      }
      if (progress && r >= config.warmup) {
        progress(++done, total, fmt::format("ctx {} repeat {}", ctx, r - config.warmup + 1));
      }
    }
    double m1_median = 0;
    for (int m = 1; m <= config.max_m; ++m) {
      const auto& samples = times[static_cast<size_t>(m - 1)];
      const json sp = spread(samples);
      const double med = sp["median"].get<double>();
      if (m == 1) m1_median = med;
      report["curve"].push_back({{"ctx", ctx},
                                 {"m", m},
                                 {"median_s", med},
                                 {"min_s", sp["min"]},
                                 {"max_s", sp["max"]},
                                 {"q1_s", sp["q1"]},
                                 {"q3_s", sp["q3"]},
                                 {"ratio_to_m1", m1_median > 0 ? med / m1_median : 0.0},
                                 {"samples_s", samples}});
    }
  }

  // Drafter costs: per proposed token, at each context.
  sampling::SamplerConfig greedy;
  greedy.temperature = 0;
  const sampling::Sampler sampler(greedy, static_cast<int>(n_vocab));
  for (int64_t ctx : config.contexts) {
    const std::vector<int32_t> context(tokens.begin(), tokens.begin() + ctx);
    if (draft) {
      spec::ModelDrafter d(*draft, pool, capacity, 512);
      report["drafters"].push_back(time_drafter(d, "model", context, sampler, config, ctx));
    }
    for (int layers : config.layerskip) {
      spec::ModelDrafter d(*target, pool, capacity, 512, layers);
      report["drafters"].push_back(
          time_drafter(d, fmt::format("layerskip:{}", layers), context, sampler, config, ctx));
    }
    // N-gram lookup on a context that repeats, so it proposes (filler alone rarely matches).
    std::vector<int32_t> repeating(context.begin(), context.begin() + ctx / 2);
    repeating.insert(repeating.end(), context.begin(), context.begin() + (ctx - ctx / 2));
    spec::NgramDrafter ngram(1, 4);
    report["drafters"].push_back(time_drafter(ngram, "ngram", repeating, sampler, config, ctx));
  }
  report["peak_rss_bytes"] = peak_rss_bytes();
  return report;
}

}  // namespace augur::bench
