// The speculative-decoding options shared by the commands that generate: which drafter
// (--draft auto[:SOURCES]|none|model|ngram[:N]|layerskip:L, -md/--model-draft FILE), how many
// tokens it drafts per cycle (--draft-max; the cap for auto), and --policy-log. Builds the
// DraftSource they describe.
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cache/model_cache.h"
#include "kernels/thread_pool.h"
#include "model/model.h"
#include "spec/acceptance.h"
#include "spec/draft_source.h"

namespace augur::cli {

struct DraftOptions {
  std::string draft;        // empty: "auto"
  std::string draft_model;  // -md FILE
  int draft_max = 8;
  spec::SampledRule sampled_rule = spec::SampledRule::kBlock;  // --accept
  std::string policy_log;                                      // --policy-log FILE (auto only)

  void add_options(CLI::App& app);
};

// A drafter and what it owns (a draft model's weights). drafter is null for --draft none.
struct DraftSetup {
  std::unique_ptr<model::Model> draft_model;
  std::unique_ptr<spec::DraftSource> drafter;
  std::unique_ptr<std::ofstream> policy_log;  // the auto drafter's per-cycle log, if asked
  int draft_max = 0;
};

// The draft model of -md (null when there is none or the drafter does not use it), checked to
// share the target's vocabulary (Unsupported otherwise). Loaded once, it may back many drafters.
std::unique_ptr<model::Model> load_draft_model(const DraftOptions& options,
                                               const model::Model& target);
// One drafter as the options describe it, over an already loaded draft model; null for --draft
// none. InvalidArgument names the offending option.
std::unique_ptr<spec::DraftSource> make_draft_source(
    const DraftOptions& options, const model::Model& target, const model::Model* draft_model,
    kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch, cache::CacheTypes cache_types = {});

// Validates the combination (InvalidArgument names the offending option; Unsupported for a draft
// model whose vocabulary differs from the target's) and builds the drafter.
DraftSetup make_drafter(const DraftOptions& options, const model::Model& target,
                        kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch,
                        cache::CacheTypes cache_types = {});

// The `policy` object of --json stats for an auto drafter (cycles per source, AR steps, mean k,
// predicted vs observed tokens and seconds per cycle); null for any other drafter.
nlohmann::json policy_json(const spec::DraftSource* drafter);
// One stderr line summarising the same; empty for any other drafter.
std::string policy_summary(const spec::DraftSource* drafter);

}  // namespace augur::cli
