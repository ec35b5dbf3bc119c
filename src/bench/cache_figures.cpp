#include "bench/cache_figures.h"

#include <fmt/format.h>

#include "bench/evidence_schema.h"
#include "cache/model_cache.h"
#include "common/error.h"
#include "spec/argmax_drafts.h"
#include "spec/auto_drafter.h"
#include "spec/head_drafters.h"
#include "spec/model_drafter.h"

namespace augur::bench {

using nlohmann::json;

namespace {

// One figure that all layers of a kind share (their slots or bytes); InvalidArgument otherwise.
void same(int64_t& shared, int64_t value, const char* what) {
  if (shared >= 0 && shared != value) {
    throw InvalidArgument(
        fmt::format("cache layers of one kind differ in {} ({} vs {})", what, shared, value));
  }
  shared = value;
}

const cache::ModelCache* model_cache(const spec::DraftSource& source) {
  if (const auto* drafter = dynamic_cast<const spec::ModelDrafter*>(&source)) {
    return &drafter->cache();
  }
  if (const auto* cache = spec::head_drafter_cache(source)) return cache;
  if (const auto* argmax = dynamic_cast<const spec::ArgmaxDrafts*>(&source)) {
    return model_cache(argmax->inner());
  }
  return nullptr;
}

}  // namespace

json cache_figures(const cache::ModelCache& cache) {
  int64_t full_layers = 0, full_slots = -1, window_layers = 0, window = -1, window_slots = -1;
  int64_t recurrent_layers = 0, state_layer = -1;
  for (int layer = 0; layer < cache.n_layers(); ++layer) {
    const auto spec = cache.layer_cache(layer);
    if (spec.kind == model::LayerCache::Kind::kRecurrent) {
      ++recurrent_layers;
      same(state_layer, cache.layer_bytes(layer), "state bytes");
    } else if (spec.window > 0) {
      ++window_layers;
      same(window, spec.window, "window");
      same(window_slots, cache.slots(layer), "ring slots");
    } else {
      ++full_layers;
      same(full_slots, cache.slots(layer), "slots");
    }
  }
  const auto row = static_cast<int64_t>(cache.k_row_bytes() + cache.v_row_bytes());
  const int64_t heads = cache.n_heads();
  const int64_t kv = cache.kv_bytes();
  json out = {{"n_ctx", cache.capacity()},
              {"n_heads_kv", heads},
              {"k_row_bytes", cache.k_row_bytes()},
              {"v_row_bytes", cache.v_row_bytes()},
              {"full",
               {{"layers", full_layers},
                {"slots", std::max<int64_t>(0, full_slots)},
                {"bytes", full_layers * heads * std::max<int64_t>(0, full_slots) * row}}},
              {"window",
               {{"layers", window_layers},
                {"window", std::max<int64_t>(0, window)},
                {"slots", std::max<int64_t>(0, window_slots)},
                {"bytes", window_layers * heads * std::max<int64_t>(0, window_slots) * row}}},
              {"recurrent",
               {{"layers", recurrent_layers},
                {"layer_bytes", std::max<int64_t>(0, state_layer)},
                {"bytes", cache.state_bytes()}}},
              {"kv_bytes", kv},
              {"state_bytes", cache.state_bytes()}};
  const int64_t all_full = (full_layers + window_layers) * heads * cache.capacity() * row;
  if (all_full > 0) out["kv_ratio_to_full"] = static_cast<double>(kv) / all_full;
  return out;
}

json draft_cache_figures(const spec::DraftSource* drafter) {
  json out = json::object();
  if (drafter == nullptr) return out;
  if (const auto* automatic = dynamic_cast<const spec::AutoDrafter*>(drafter)) {
    for (size_t i = 0; i < automatic->n_sources(); ++i) {
      if (const auto* cache = model_cache(automatic->source(i))) {
        out[automatic->policy().sources()[i]] = cache_figures(*cache);
      }
    }
  } else if (const auto* cache = model_cache(*drafter)) {
    out[drafter->name()] = cache_figures(*cache);
  }
  return out;
}

int64_t cache_figure_bytes(const json& figures) {
  int64_t total = 0;
  for (const char* key : {"kv_bytes", "state_bytes"}) {
    if (figures.is_object() && figures.contains(key) && figures[key].is_number_integer()) {
      total += figures[key].get<int64_t>();
    }
  }
  return total;
}

std::vector<std::string> cache_figure_problems(const json& figures, std::optional<int64_t> n_ctx) {
  std::vector<std::string> problems;
  if (!figures.is_object())
    return {fmt::format("is {}, expected an object", evidence::describe(figures))};
  // A figure read as given: missing or negative is a problem, reported once.
  auto get = [&](const json& object, const std::string& group, const char* key) -> int64_t {
    const std::string name = group.empty() ? key : group + "." + key;
    if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer() ||
        object[key].get<int64_t>() < 0) {
      problems.push_back(fmt::format("{} is {}, expected a byte or row count", name,
                                     object.is_object() && object.contains(key)
                                         ? evidence::describe(object[key])
                                         : std::string("missing")));
      return 0;
    }
    return object[key].get<int64_t>();
  };
  auto group = [&](const char* key) -> const json& {
    static const json kNone;
    return figures.contains(key) ? figures[key] : kNone;
  };
  const int64_t ctx = get(figures, "", "n_ctx");
  const int64_t heads = get(figures, "", "n_heads_kv");
  const int64_t row = get(figures, "", "k_row_bytes") + get(figures, "", "v_row_bytes");
  const json& full = group("full");
  const json& window = group("window");
  const json& recurrent = group("recurrent");
  const int64_t full_layers = get(full, "full", "layers"), full_slots = get(full, "full", "slots");
  const int64_t full_bytes = get(full, "full", "bytes");
  const int64_t window_layers = get(window, "window", "layers");
  const int64_t window_rows = get(window, "window", "window");
  const int64_t window_slots = get(window, "window", "slots");
  const int64_t window_bytes = get(window, "window", "bytes");
  const int64_t state_layers = get(recurrent, "recurrent", "layers");
  const int64_t state_layer_bytes = get(recurrent, "recurrent", "layer_bytes");
  const int64_t state_bytes_parts = get(recurrent, "recurrent", "bytes");
  const int64_t kv = get(figures, "", "kv_bytes");
  const int64_t state = get(figures, "", "state_bytes");
  if (!problems.empty()) return problems;  // the rest would be derived from missing figures

  if (n_ctx && ctx != *n_ctx) {
    problems.push_back(fmt::format("n_ctx is {}, but the run's context is {}", ctx, *n_ctx));
  }
  auto product = [&](const char* name, int64_t bytes, int64_t layers, int64_t slots) {
    if (bytes != layers * heads * slots * row) {
      problems.push_back(fmt::format(
          "{}.bytes is {}, but layers {} x n_heads_kv {} x slots {} x row bytes {} is {}", name,
          bytes, layers, heads, slots, row, layers * heads * slots * row));
    }
  };
  product("full", full_bytes, full_layers, full_slots);
  product("window", window_bytes, window_layers, window_slots);
  if (full_layers > 0 && full_slots != ctx) {
    problems.push_back(
        fmt::format("full.slots is {}, but a full layer holds a row per position of n_ctx {}",
                    full_slots, ctx));
  }
  // A ring holds at least the rows its window sees (all of a shorter context), never more rows
  // than the context has.
  if (window_layers > 0 &&
      (window_rows <= 0 || window_slots < std::min(window_rows, ctx) || window_slots > ctx)) {
    problems.push_back(
        fmt::format("window.slots is {}: a ring of window {} in n_ctx {} holds "
                    "between min(window, n_ctx) and n_ctx rows",
                    window_slots, window_rows, ctx));
  }
  if (state_bytes_parts != state_layers * state_layer_bytes) {
    problems.push_back(fmt::format("recurrent.bytes is {}, but layers {} x layer_bytes {} is {}",
                                   state_bytes_parts, state_layers, state_layer_bytes,
                                   state_layers * state_layer_bytes));
  }
  if (kv != full_bytes + window_bytes) {
    problems.push_back(fmt::format("kv_bytes is {}, but full.bytes + window.bytes is {}", kv,
                                   full_bytes + window_bytes));
  }
  if (state != state_bytes_parts) {
    problems.push_back(
        fmt::format("state_bytes is {}, but recurrent.bytes is {}", state, state_bytes_parts));
  }
  const int64_t all_full = (full_layers + window_layers) * heads * ctx * row;
  if (figures.contains("kv_ratio_to_full")) {
    const json& ratio = figures["kv_ratio_to_full"];
    if (all_full <= 0 || !ratio.is_number() ||
        !evidence::close(ratio.get<double>(), static_cast<double>(kv) / all_full)) {
      problems.push_back(fmt::format(
          "kv_ratio_to_full is {}, but kv_bytes {} over a full cache's {} bytes (attention "
          "layers x n_heads_kv x n_ctx x row bytes) is {}",
          evidence::describe(ratio), kv, all_full,
          all_full > 0 ? fmt::format("{:.6g}", static_cast<double>(kv) / all_full)
                       : std::string("undefined")));
    }
  }
  return problems;
}

}  // namespace augur::bench
