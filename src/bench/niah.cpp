#include "bench/niah.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "bench/build_info.h"
#include "bench/evidence_niah.h"
#include "bench/model_info.h"
#include "bench/prompt_file.h"
#include "cache/model_cache.h"
#include "common/error.h"
#include "model/evaluator.h"
#include "tokenizer/tokenizer.h"

namespace augur::bench {
namespace {

using nlohmann::json;

struct Needle {
  const char* name;
  const char* value;
};
// Names and values absent from the filler, so only the planted line can supply them.
constexpr Needle kNeedles[] = {{"CACHE_SEED", "45829"},    {"MAX_RETRY_LIMIT", "7316"},
                               {"BUFFER_QUOTA", "90417"},  {"SHARD_MAGIC", "2648"},
                               {"TIMEOUT_TICKS", "53170"}, {"HASH_SALT", "81923"}};

struct Sample {
  std::vector<int32_t> greedy;
  std::vector<double> probs;
};

// Teacher-forced pass over context + value: the greedy token and the probability of the value
// token at each of the value's steps.
Sample score(const model::Model& model, kernels::ThreadPool& pool, cache::ModelCache& cache,
             const std::vector<int32_t>& context, const std::vector<int32_t>& value) {
  std::vector<int32_t> tokens = context;
  tokens.insert(tokens.end(), value.begin(), value.end() - 1);
  std::vector<int32_t> positions(tokens.size()), rows(value.size());
  std::iota(positions.begin(), positions.end(), 0);
  std::iota(rows.begin(), rows.end(), static_cast<int32_t>(context.size() - 1));
  const int64_t n_vocab = model.hparams().n_vocab;
  std::vector<float> logits(rows.size() * n_vocab);  // [value tokens, n_vocab]
  model::Evaluator eval(model, pool, 512, cache.capacity());
  cache.clear();
  eval.forward(tokens, positions, rows, cache.memory(), logits.data());
  cache.commit(static_cast<int64_t>(tokens.size()));
  Sample s;
  for (size_t step = 0; step < value.size(); ++step) {
    const float* row = logits.data() + step * n_vocab;
    const float top = *std::max_element(row, row + n_vocab);
    double sum = 0;
    for (int64_t t = 0; t < n_vocab; ++t) sum += std::exp(static_cast<double>(row[t]) - top);
    s.greedy.push_back(static_cast<int32_t>(std::max_element(row, row + n_vocab) - row));
    s.probs.push_back(std::exp(static_cast<double>(row[value[step]]) - top) / sum);
  }
  return s;
}

}  // namespace

json run_niah(const NiahConfig& config, const NiahProgress& progress) {
  for (const int depth : config.depths_pct) {
    if (depth < 0 || depth > 100) {
      throw InvalidArgument(fmt::format("--depths: {} is outside 0..100", depth));
    }
  }
  if (config.needles < 1 || config.needles > static_cast<int>(std::size(kNeedles))) {
    throw InvalidArgument(
        fmt::format("--needles {}: use 1..{}", config.needles, std::size(kNeedles)));
  }
  std::vector<gguf::TensorType> types;
  for (const auto& name : config.cache_types) types.push_back(cache::parse_cache_type(name));
  auto model = model::load_model(config.model_path);
  const auto tok = tokenizer::Tokenizer::from_gguf(model->file());
  std::vector<int32_t> filler;
  for (const auto& line : read_prompt_file(config.prompts_path)) {
    const auto ids = tok->encode(line.text, false, false);
    filler.insert(filler.end(), ids.begin(), ids.end());
  }
  const int threads =
      config.threads > 0 ? config.threads : static_cast<int>(std::thread::hardware_concurrency());
  kernels::ThreadPool pool(std::max(1, threads));

  json report = {
      {"schema", "augur.bench/1"},  {"kind", "niah"},
      {"created", utc_timestamp()}, {"machine", machine_info(pool.size())},
      {"build", build_info()},      {"models", json::array({model_info("target", *model)})}};
  report["config"] = {{"prompts_file", report_path(config.prompts_path)},
                      {"prompts_sha256", sha256_file(config.prompts_path)},
                      {"contexts", config.contexts},
                      {"depths_pct", config.depths_pct},
                      {"cache_types", config.cache_types},
                      {"needles", config.needles},
                      {"n_ctx_train", model->hparams().n_ctx_train},
                      {"threads", pool.size()}};
  report["samples"] = json::array();
  const size_t total =
      config.contexts.size() * types.size() * config.depths_pct.size() * config.needles;
  size_t done = 0;
  for (const int64_t n_ctx : config.contexts) {
    for (size_t t = 0; t < types.size(); ++t) {
      cache::ModelCache cache(
          *model, {.capacity = n_ctx, .max_batch = 512, .type_k = types[t], .type_v = types[t]});
      for (const int depth : config.depths_pct) {
        for (int n = 0; n < config.needles; ++n) {
          const Needle& needle = kNeedles[n];
          const auto line =
              tok->encode(fmt::format("\n{} = {}\n", needle.name, needle.value), false, false);
          const auto question = tok->encode(fmt::format("\n{} = ", needle.name), false, false);
          const auto asked =
              tok->encode(fmt::format("\n{} = {}", needle.name, needle.value), false, false);
          if (!std::equal(question.begin(), question.end(), asked.begin())) {
            throw InvalidArgument(
                fmt::format("needle {}: the question's tokens are not a prefix", needle.name));
          }
          const std::vector<int32_t> value(asked.begin() + question.size(), asked.end());
          const int64_t fill =
              n_ctx - 1 - static_cast<int64_t>(line.size() + question.size() + value.size());
          if (fill < 0 || fill > static_cast<int64_t>(filler.size())) {
            throw InvalidArgument(
                fmt::format("context {}: needs filler of {} tokens, the prompts file gives {}",
                            n_ctx, fill, filler.size()));
          }
          const int64_t at = std::llround(static_cast<double>(fill) * depth / 100.0);
          std::vector<int32_t> context = {tok->bos()};
          context.insert(context.end(), filler.begin(), filler.begin() + at);
          context.insert(context.end(), line.begin(), line.end());
          context.insert(context.end(), filler.begin() + at, filler.begin() + fill);
          context.insert(context.end(), question.begin(), question.end());
          const Sample s = score(*model, pool, cache, context, value);
          report["samples"].push_back({{"context", n_ctx},
                                       {"cache_type", config.cache_types[t]},
                                       {"depth_pct", depth},
                                       {"needle", needle.name},
                                       {"needle_position", 1 + at},
                                       {"value_tokens", value},
                                       {"greedy_tokens", s.greedy},
                                       {"token_probs", s.probs},
                                       {"kv_bytes", cache.kv_bytes()}});
          if (progress) {
            progress(++done, total,
                     fmt::format("ctx {} {} depth {}%", n_ctx, config.cache_types[t], depth));
          }
        }
      }
    }
  }
  report["summary"] = evidence::niah_summary(report["samples"]);
  return report;
}

}  // namespace augur::bench
