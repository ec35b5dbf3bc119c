#include "bench/evidence_cache_memory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "bench/cache_figures.h"
#include "spec/head_drafters.h"

namespace augur::bench::evidence {

namespace {

using nlohmann::json;

// The kinds of draft source of an arm that keep a cache of their own ("model", "layerskip",
// "eagle3", "dflash" and their "-argmax" forms),
// from its declared configuration. (An auto drafter may hold one layer-skip cache per depth.)
std::set<std::string> caching_sources(const ArmConfig& arm) {
  std::set<std::string> kinds;
  if (arm.kind != "spec") return kinds;
  std::stringstream sources(arm.drafter == "auto" ? arm.sources : arm.drafter);
  for (std::string source; std::getline(sources, source, '+');) {
    if (source == "model" || source == "layerskip" || spec::reads_head(source)) {
      kinds.insert(source);
    }
  }
  return kinds;
}

// What `drafts` ({label: figures}) lacks or adds against the arm's caching sources; "" if none.
std::string draft_cache_mismatch(const json& drafts, const ArmConfig& arm) {
  const std::set<std::string> expected = caching_sources(arm);
  if (!drafts.is_object()) return fmt::format("is {}, expected an object", describe(drafts));
  std::set<std::string> kinds;
  for (const auto& [label, figures] : drafts.items())
    kinds.insert(label.substr(0, label.find(':')));
  if (kinds != expected || (arm.drafter != "auto" && drafts.size() > 1)) {
    return fmt::format("holds {} cache(s) of {}, but the arm's drafter keeps one per source of {}",
                       drafts.size(),
                       kinds.empty() ? "none" : fmt::format("{}", fmt::join(kinds, "+")),
                       expected.empty() ? "none" : fmt::format("{}", fmt::join(expected, "+")));
  }
  return "";
}

// The figure's problems, each prefixed by where it is; the bytes it claims.
int64_t check_cache(const json& figures, const std::string& where, const RunReport& run,
                    std::vector<std::string>& problems) {
  const auto n_ctx = run.config.n_ctx > 0 ? std::optional(run.config.n_ctx) : std::nullopt;
  for (const std::string& p : cache_figure_problems(figures, n_ctx)) {
    problems.push_back(fmt::format("{}: {}", where, p));
  }
  return cache_figure_bytes(figures);
}

}  // namespace

void check_cache_memory(const RunReport& run, const Arm& arm, int64_t model_bytes,
                        std::vector<std::string>& problems) {
  const bool claimed = std::any_of(run.samples.begin(), run.samples.end(),
                                   [](const Sample& s) { return s.cache_memory != nullptr; });
  if (!claimed) return;
  const json* first = nullptr;
  for (const Sample* s : run.of(arm.name, /*with_warmups=*/true)) {
    const auto where = fmt::format("samples[{}] {} cache_memory", s->index, s->label());
    const json* memory = s->cache_memory;
    if (memory == nullptr) {
      problems.push_back(where + " is missing, but other samples report their caches");
      continue;
    }
    const json none;
    const json& target =
        memory->is_object() && memory->contains("target_cache") ? (*memory)["target_cache"] : none;
    const json& drafts =
        memory->is_object() && memory->contains("draft_caches") ? (*memory)["draft_caches"] : none;
    int64_t bytes = check_cache(target, where + ".target_cache", run, problems);
    if (const auto wrong = draft_cache_mismatch(drafts, arm.config); !wrong.empty()) {
      problems.push_back(fmt::format("{}.draft_caches {}", where, wrong));
    } else {
      for (const auto& [label, figures] : drafts.items()) {
        bytes +=
            check_cache(figures, fmt::format("{}.draft_caches.{}", where, label), run, problems);
      }
    }
    // Cache rows are written when allocated (zeroed), so they are resident from then on: the
    // peak of any sample holds them. (Not the weights: they are mapped, resident only as read.)
    // The arm's allocations hold the caches and the model files.
    if (s->peak_rss_bytes && *s->peak_rss_bytes > 0 && *s->peak_rss_bytes < bytes) {
      problems.push_back(
          fmt::format("samples[{}] {} has peak_rss_bytes {}, less than the {} "
                      "bytes its caches hold",
                      s->index, s->label(), *s->peak_rss_bytes, bytes));
    }
    if (s->arm_bytes && *s->arm_bytes > 0 && *s->arm_bytes < model_bytes + bytes) {
      problems.push_back(
          fmt::format("samples[{}] {} has arm_bytes {}, less than its model "
                      "files' {} bytes plus the {} its caches hold",
                      s->index, s->label(), *s->arm_bytes, model_bytes, bytes));
    }
    if (first == nullptr) {
      first = memory;
    } else if (*memory != *first) {
      problems.push_back(
          fmt::format("{} differs from the arm's first sample's, but an arm's "
                      "caches are allocated once",
                      where));
    }
  }
}

}  // namespace augur::bench::evidence
