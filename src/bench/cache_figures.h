// The memory a session's caches hold, with the raw figures it is derived from, as `augur run
// --json` and run reports write it (docs/bench-report.md, "Cache memory"), and the check that
// recomputes every derived figure from them. One object per cache:
//   {"n_ctx", "n_heads_kv", "k_row_bytes", "v_row_bytes",
//    "full": {"layers", "slots", "bytes"}, "window": {"layers", "window", "slots", "bytes"},
//    "recurrent": {"layers", "layer_bytes", "bytes"},
//    "kv_bytes", "state_bytes", "kv_ratio_to_full"}
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace augur::cache {
class ModelCache;
}
namespace augur::spec {
class DraftSource;
}

namespace augur::bench {

// The object above for one cache. Windowed layers of one model share one window (InvalidArgument
// otherwise: their bytes could not be recomputed from one slot count).
nlohmann::json cache_figures(const cache::ModelCache& cache);

// {label: cache_figures} of every drafter cache (a model or layer-skip drafter, or the model
// sources of an auto drafter); empty when the drafter keeps none.
nlohmann::json draft_cache_figures(const spec::DraftSource* drafter);

// kv_bytes + state_bytes of one figures object (0 when they are not integers).
int64_t cache_figure_bytes(const nlohmann::json& figures);

// What does not follow from the object's raw figures, one line each: a missing or negative
// figure, bytes that are not layers x heads x slots x row bytes, a full layer without a row per
// context position, a ring that cannot hold its window or exceeds the context, totals that are
// not the parts' sums, a ratio the figures do not give, or an n_ctx other than `n_ctx`.
std::vector<std::string> cache_figure_problems(const nlohmann::json& figures,
                                               std::optional<int64_t> n_ctx);

}  // namespace augur::bench
