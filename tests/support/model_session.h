// A loaded model with a pool, its cache and an evaluator: the smallest harness for
// forward-pass tests.
#pragma once

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "cache/model_cache.h"
#include "kernels/thread_pool.h"
#include "model/evaluator.h"
#include "model/model.h"

namespace augur::testing {

struct ModelSession {
  ModelSession(const std::filesystem::path& path, int64_t ubatch = 512, int64_t n_ctx = 512,
               int threads = 2, cache::CacheTypes types = {})
      : model(model::load_model(path)),
        pool(threads),
        cache(*model,
              {.capacity = n_ctx, .max_batch = ubatch, .type_k = types.k, .type_v = types.v}),
        eval(*model, pool, ubatch, n_ctx) {}

  int64_t n_vocab() const { return model->hparams().n_vocab; }

  // Appends tokens and returns the logits of every one of them [n, n_vocab]; commits them.
  std::vector<float> all_logits(const std::vector<int32_t>& tokens) {
    const int64_t n_past = cache.size();
    std::vector<int32_t> positions(tokens.size()), rows(tokens.size());
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(n_past));
    std::iota(rows.begin(), rows.end(), 0);
    std::vector<float> logits(tokens.size() * static_cast<size_t>(n_vocab()));
    eval.forward(tokens, positions, rows, cache.memory(), logits.data());
    cache.commit(static_cast<int64_t>(tokens.size()));
    return logits;
  }

  // Appends tokens, returns the last row's logits; commits them.
  std::vector<float> last_logits(const std::vector<int32_t>& tokens) {
    std::vector<float> logits(static_cast<size_t>(n_vocab()));
    eval.forward_last(tokens, cache.memory(), logits.data());
    cache.commit(static_cast<int64_t>(tokens.size()));
    return logits;
  }

  static int32_t argmax(const float* row, int64_t n) {
    return static_cast<int32_t>(std::max_element(row, row + n) - row);
  }

  // Greedy continuation of `prompt` (fed as one batch) for n tokens; also returns each step's
  // logits.
  std::vector<int32_t> greedy(const std::vector<int32_t>& prompt, int n,
                              std::vector<float>* step_logits = nullptr) {
    cache.clear();
    std::vector<float> logits = last_logits(prompt);
    std::vector<int32_t> out;
    for (int step = 0; step < n; ++step) {
      if (step_logits) step_logits->insert(step_logits->end(), logits.begin(), logits.end());
      const int32_t token = argmax(logits.data(), n_vocab());
      out.push_back(token);
      if (step + 1 < n) logits = last_logits({token});
    }
    return out;
  }

  std::unique_ptr<model::Model> model;
  kernels::ThreadPool pool;
  cache::ModelCache cache;
  model::Evaluator eval;
};

}  // namespace augur::testing
