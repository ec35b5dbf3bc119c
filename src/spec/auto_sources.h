// Which drafters `--draft auto` plans over, and building them: the draft model (when one is
// loaded), n-gram lookup, and layer-skip at a quarter and half of the target's depth. Shared by
// the CLI and the benchmark arms so both mean the same thing by "auto".
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/model_cache.h"
#include "kernels/thread_pool.h"
#include "model/model.h"
#include "spec/auto_drafter.h"

namespace augur::spec {

struct AutoSources {
  bool model = false;   // the -md draft model
  bool eagle3 = false;  // an EAGLE-3 head reading the target (-md FILE of arch eagle3)
  bool dflash = false;  // a DFlash block drafter reading the target (-md FILE of arch dflash)
  bool mtp = false;     // the target's own MTP / NextN layer (no file)
  bool ngram = true;
  bool layerskip = true;
  // Canonical spelling, e.g. "model+eagle3+ngram+layerskip".
  std::string name() const;
};

// Every source at hand: the draft model and the head (of kind "eagle3", "dflash" or "mtp") only
// when given.
AutoSources all_auto_sources(bool have_draft_model, std::string_view head_kind = {});
// A '+'-separated list of model, eagle3, dflash, mtp, ngram, layerskip; InvalidArgument naming
// `option` (e.g.
// "--draft auto:x") for an unknown or repeated name or an empty list.
AutoSources parse_auto_sources(std::string_view list, std::string_view option);

// Layer-skip depths auto chooses among for a target of n_layer layers.
std::vector<int> auto_layerskip_depths(int n_layer);

// The drafters of `sources`, each with its distinct label ("model", the head's kind, "ngram",
// "layerskip:<depth>"), in the order the policy plans over them.
struct AutoSourceList {
  std::vector<std::unique_ptr<DraftSource>> drafters;
  std::vector<std::string> labels;
};

// InvalidArgument when `sources.model` is set without a draft model, `sources.eagle3`,
// `sources.dflash` or `sources.mtp` without a head of that kind, or nothing applies.
AutoSourceList make_auto_sources(const AutoSources& sources, const model::Model& target,
                                 const model::Model* draft_model, kernels::ThreadPool& pool,
                                 int64_t n_ctx, int64_t ubatch, cache::CacheTypes types = {},
                                 const model::Model* head = nullptr);
// make_auto_sources' drafters under the policy with live costs.
std::unique_ptr<AutoDrafter> make_auto_drafter(
    const AutoSources& sources, const model::Model& target, const model::Model* draft_model,
    kernels::ThreadPool& pool, int64_t n_ctx, int64_t ubatch, int k_max,
    cache::CacheTypes types = {}, const model::Model* head = nullptr);

}  // namespace augur::spec
