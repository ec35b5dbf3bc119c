#include "spec/auto_sources.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "spec/head_drafters.h"
#include "spec/model_drafter.h"
#include "spec/ngram_drafter.h"

namespace augur::spec {

std::string AutoSources::name() const {
  std::string out;
  for (const auto& [on, label] :
       {std::pair{model, "model"}, std::pair{eagle3, "eagle3"}, std::pair{dflash, "dflash"},
        std::pair{mtp, "mtp"}, std::pair{ngram, "ngram"}, std::pair{layerskip, "layerskip"}}) {
    if (on) out += (out.empty() ? "" : "+") + std::string(label);
  }
  return out;
}

AutoSources all_auto_sources(bool have_draft_model, std::string_view head_kind) {
  AutoSources s;
  s.model = have_draft_model;
  s.eagle3 = head_kind == "eagle3";
  s.dflash = head_kind == "dflash";
  s.mtp = head_kind == "mtp";
  return s;
}

AutoSources parse_auto_sources(std::string_view list, std::string_view option) {
  AutoSources s{false, false, false, false, false, false};
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(list.find('+', start), list.size());
    const std::string_view name = list.substr(start, end - start);
    bool* flag = name == "model"       ? &s.model
                 : name == "eagle3"    ? &s.eagle3
                 : name == "dflash"    ? &s.dflash
                 : name == "mtp"       ? &s.mtp
                 : name == "ngram"     ? &s.ngram
                 : name == "layerskip" ? &s.layerskip
                                       : nullptr;
    if (!flag) {
      throw InvalidArgument(
          fmt::format("{}: '{}' is not a draft source: use model, eagle3, dflash, mtp, ngram "
                      "and layerskip joined by '+'",
                      option, name));
    }
    if (*flag) throw InvalidArgument(fmt::format("{}: source '{}' is named twice", option, name));
    *flag = true;
    if (end == list.size()) return s;
    start = end + 1;
  }
}

std::vector<int> auto_layerskip_depths(int n_layer) {
  std::vector<int> depths;
  for (const int depth : {n_layer / 4, n_layer / 2}) {
    if (depth >= 1 && depth < n_layer &&
        std::find(depths.begin(), depths.end(), depth) == depths.end()) {
      depths.push_back(depth);
    }
  }
  return depths;
}

AutoSourceList make_auto_sources(const AutoSources& sources, const model::Model& target,
                                 const model::Model* draft_model, kernels::ThreadPool& pool,
                                 int64_t n_ctx, int64_t ubatch, cache::CacheTypes types,
                                 const model::Model* head) {
  if (sources.model && !draft_model) {
    throw InvalidArgument("the auto policy's source 'model' needs a draft model: give -md FILE");
  }
  const std::string_view kind = head ? head_kind(*head) : std::string_view();
  if (sources.eagle3 && kind != "eagle3") {
    throw InvalidArgument("the auto policy's source 'eagle3' needs an EAGLE-3 head: give -md FILE");
  }
  if (sources.dflash && kind != "dflash") {
    throw InvalidArgument(
        "the auto policy's source 'dflash' needs a DFlash drafter: give -md FILE");
  }
  if (sources.mtp && kind != "mtp") {
    throw InvalidArgument(
        "the auto policy's source 'mtp' needs a target with an MTP / NextN layer, and no -md");
  }
  std::vector<std::unique_ptr<DraftSource>> list;
  std::vector<std::string> labels;
  if (sources.model) {
    list.push_back(std::make_unique<ModelDrafter>(*draft_model, pool, n_ctx, ubatch, -1, types));
    labels.emplace_back("model");
  }
  if (sources.eagle3 || sources.dflash || sources.mtp) {
    list.push_back(make_head_drafter(*head, pool, n_ctx, ubatch, types));
    labels.emplace_back(kind);
  }
  if (sources.ngram) {
    list.push_back(std::make_unique<NgramDrafter>(1, 4));
    labels.emplace_back("ngram");
  }
  if (sources.layerskip) {
    for (const int depth : auto_layerskip_depths(static_cast<int>(target.hparams().n_layer))) {
      list.push_back(std::make_unique<ModelDrafter>(target, pool, n_ctx, ubatch, depth, types));
      labels.push_back(fmt::format("layerskip:{}", depth));
    }
  }
  if (list.empty()) {
    throw InvalidArgument(fmt::format("the auto policy has no draft source for this model ({})",
                                      sources.name().empty() ? "none named" : sources.name()));
  }
  return {std::move(list), std::move(labels)};
}

std::unique_ptr<AutoDrafter> make_auto_drafter(const AutoSources& sources,
                                               const model::Model& target,
                                               const model::Model* draft_model,
                                               kernels::ThreadPool& pool, int64_t n_ctx,
                                               int64_t ubatch, int k_max, cache::CacheTypes types,
                                               const model::Model* head) {
  auto [drafters, labels] =
      make_auto_sources(sources, target, draft_model, pool, n_ctx, ubatch, types, head);
  return std::make_unique<AutoDrafter>(std::move(drafters), k_max, std::move(labels));
}

}  // namespace augur::spec
