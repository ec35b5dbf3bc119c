// The speculative-decoding options shared by the commands that generate: which drafter
// (--draft none|model|ngram[:N]|layerskip:L, -md/--model-draft FILE) and how many tokens it
// drafts per cycle (--draft-max). Builds the DraftSource they describe.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "kernels/thread_pool.h"
#include "model/model.h"
#include "spec/draft_source.h"

namespace augur::cli {

struct DraftOptions {
  std::string draft;        // empty: "model" when -md is given, else "none"
  std::string draft_model;  // -md FILE
  int draft_max = 8;

  void add_options(CLI::App& app);
};

// A drafter and what it owns (a draft model's weights). drafter is null for --draft none.
struct DraftSetup {
  std::unique_ptr<model::Model> draft_model;
  std::unique_ptr<spec::DraftSource> drafter;
  int draft_max = 0;
};

// Validates the combination (InvalidArgument names the offending option; Unsupported for a draft
// model whose vocabulary differs from the target's) and builds the drafter.
DraftSetup make_drafter(const DraftOptions& options, const model::Model& target,
                        kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch);

}  // namespace augur::cli
