#include "bench/evidence_niah.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

namespace augur::bench::evidence {
namespace {

using nlohmann::json;

bool recovered(const json& sample) {
  return sample["greedy_tokens"] == sample["value_tokens"];
}

double value_prob(const json& sample) {
  double p = 1;
  for (const json& token : sample["token_probs"]) p *= token.get<double>();
  return p;
}

}  // namespace

json niah_summary(const json& samples) {
  struct Cell {
    int64_t n = 0, recovered = 0, kv_bytes = 0;
    double prob_sum = 0;
    std::map<int64_t, std::pair<int64_t, int64_t>> by_depth;  // depth -> (recovered, n)
  };
  std::map<std::pair<int64_t, std::string>, Cell> cells;
  for (const json& s : samples) {
    Cell& c = cells[{s["context"].get<int64_t>(), s["cache_type"].get<std::string>()}];
    const bool ok = recovered(s);
    ++c.n;
    c.recovered += ok;
    c.prob_sum += value_prob(s);
    c.kv_bytes = s["kv_bytes"].get<int64_t>();
    auto& depth = c.by_depth[s["depth_pct"].get<int64_t>()];
    depth.first += ok;
    ++depth.second;
  }
  json out = json::array();
  for (const auto& [key, c] : cells) {
    json by_depth = json::object();
    for (const auto& [depth, counts] : c.by_depth) {
      by_depth[std::to_string(depth)] = static_cast<double>(counts.first) / counts.second;
    }
    out.push_back({{"context", key.first},
                   {"cache_type", key.second},
                   {"samples", c.n},
                   {"recovered", c.recovered},
                   {"recall", static_cast<double>(c.recovered) / c.n},
                   {"mean_value_prob", c.prob_sum / c.n},
                   {"recall_by_depth", by_depth},
                   {"kv_bytes", c.kv_bytes}});
  }
  return out;
}

std::vector<Violation> check_niah(const json& report, SchemaReader& schema) {
  const json* config = schema.object(report, "config", "report");
  const json* samples = schema.array(report, "samples", "report");
  if (config == nullptr || samples == nullptr) return {};
  const auto contexts = schema.integers(*config, "contexts", "config", Bound::kPositive);
  const auto depths = schema.integers(*config, "depths_pct", "config");
  const auto needles = schema.integer(*config, "needles", "config", Bound::kPositive);
  const json* types = schema.array(*config, "cache_types", "config");
  std::map<std::tuple<int64_t, std::string, int64_t>, int64_t> counts;
  std::map<std::pair<int64_t, std::string>, int64_t> kv_bytes;
  for (size_t pos = 0; pos < samples->size(); ++pos) {
    const json* s = schema.entry(*samples, pos, "samples");
    if (s == nullptr) continue;
    const std::string where = fmt::format("samples[{}]", pos);
    const auto context = schema.integer(*s, "context", where, Bound::kPositive);
    const auto type = schema.string(*s, "cache_type", where);
    const auto depth = schema.integer(*s, "depth_pct", where);
    const auto bytes = schema.integer(*s, "kv_bytes", where, Bound::kPositive);
    const auto value = schema.integers(*s, "value_tokens", where);
    const auto greedy = schema.integers(*s, "greedy_tokens", where);
    const auto probs = schema.samples(*s, "token_probs", where, Bound::kNonNegative);
    if (!context || !type || !depth || !bytes || !value || !greedy || !probs) continue;
    if (value->empty() || greedy->size() != value->size() || probs->size() != value->size()) {
      schema.defect(
          fmt::format("{}: value_tokens, greedy_tokens and token_probs must have one "
                      "entry per value token ({}, {}, {})",
                      where, value->size(), greedy->size(), probs->size()));
      continue;
    }
    for (const double p : *probs) {
      if (p > 1) schema.defect(fmt::format("{}: token probability {} above 1", where, p));
    }
    ++counts[{*context, *type, *depth}];
    auto [it, fresh] = kv_bytes.emplace(std::make_pair(*context, *type), *bytes);
    if (!fresh && it->second != *bytes) {
      schema.defect(fmt::format("{}: kv_bytes {} but another sample of context {} {} has {}", where,
                                *bytes, *context, *type, it->second));
    }
  }
  if (contexts && depths && needles && types) {
    for (const int64_t context : *contexts) {
      for (const json& type : *types) {
        for (const int64_t depth : *depths) {
          const int64_t n =
              counts[{context, type.is_string() ? type.get<std::string>() : type.dump(), depth}];
          if (n != *needles) {
            schema.defect(fmt::format("context {} {} depth {}%: {} samples, config.needles is {}",
                                      context, type.dump(), depth, n, *needles));
          }
        }
      }
    }
  }
  if (!schema.clean()) return {};
  if (const json* summary = schema.array(report, "summary", "report")) {
    const json derived = niah_summary(*samples);
    if (summary->size() != derived.size()) {
      schema.defect(
          fmt::format("summary: {} cells, the samples give {}", summary->size(), derived.size()));
    } else {
      for (size_t cell = 0; cell < derived.size(); ++cell) {
        const std::string diff =
            summary_difference(derived[cell], (*summary)[cell], fmt::format("summary[{}]", cell));
        if (!diff.empty()) schema.defect(diff);
      }
    }
  }
  return {};
}

}  // namespace augur::bench::evidence
