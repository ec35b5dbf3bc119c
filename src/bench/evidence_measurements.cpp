#include "bench/evidence_measurements.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "bench/statistics.h"

namespace augur::bench::evidence {

namespace {

using nlohmann::json;

// Every key of `names` ({"median": "median_s", ...}) present in `object` must equal that statistic
// of `samples`; missing ones are defects when `required`.
void check_statistics(const json& object, const std::vector<double>& samples,
                      std::initializer_list<std::pair<const char*, const char*>> names,
                      const std::string& where, bool required, SchemaReader& schema) {
  const json stats = spread(samples);
  for (const auto& [stat, key] : names) {
    const auto value = schema.number(object, key, where, Bound::kNonNegative, required);
    if (value && !close(*value, stats[stat].get<double>())) {
      schema.defect(fmt::format("{}: '{}' is {} but its samples give {}", where, key, *value,
                                stats[stat].get<double>()));
    }
  }
}

// A memory figure must be measured in this run: positive, and a report-level peak the maximum of
// any per-point ones.
void check_peak_rss(const json& report, const std::vector<std::pair<std::string, int64_t>>& points,
                    SchemaReader& schema, std::vector<Violation>& out) {
  std::optional<int64_t> report_rss;
  if (schema.field(report, "peak_rss_bytes", "report", false) != nullptr) {
    report_rss = schema.integer(report, "peak_rss_bytes", "report", Bound::kAny);
    if (!report_rss) return;
  }
  if (!schema.clean()) return;
  int64_t max_rss = 0;
  for (const auto& [where, rss] : points) {
    if (rss <= 0) {
      out.push_back({"MEMORY_CLAIM", fmt::format("{} has peak_rss_bytes {}, expected a measured "
                                                 "(positive) figure",
                                                 where, rss)});
    }
    max_rss = std::max(max_rss, rss);
  }
  if (!report_rss) {
    out.push_back(
        {"MEMORY_CLAIM", "the report has no peak_rss_bytes: its memory was not measured"});
  } else if (*report_rss <= 0) {
    out.push_back({"MEMORY_CLAIM", fmt::format("the report's peak_rss_bytes is {}, expected a "
                                               "measured (positive) figure",
                                               *report_rss)});
  } else if (!points.empty() && *report_rss != max_rss) {
    out.push_back({"MEMORY_CLAIM", fmt::format("the report's peak_rss_bytes is {} but its points' "
                                               "maximum is {}",
                                               *report_rss, max_rss)});
  }
}

const std::initializer_list<std::pair<const char*, const char*>> kSpreadKeys = {
    {"median", "median"}, {"min", "min"}, {"max", "max"},
    {"q1", "q1"},         {"q3", "q3"},   {"iqr", "iqr"}};

}  // namespace

// Each curve point holds its timed forwards (samples_s); median_s, min_s, max_s, q1_s, q3_s and
// ratio_to_m1 (= median_s / the m = 1 point's median_s at the same ctx) follow from them. A
// drafter that proposed holds samples_per_token_s, of which per_token_s is the median.
std::vector<Violation> check_verify_curve(const json& report, SchemaReader& schema) {
  if (const json* config = schema.object(report, "config", "report")) {
    schema.require(*config, "config",
                   {{"max_m", Type::kInt, Bound::kPositive},
                    {"contexts", Type::kIntArray, Bound::kPositive},
                    {"repeats", Type::kInt, Bound::kPositive},
                    {"threads", Type::kInt, Bound::kPositive}});
  }
  std::vector<std::pair<std::string, int64_t>> point_rss;
  if (const json* curve = schema.array(report, "curve", "report")) {
    if (curve->empty()) schema.defect("report: 'curve' is empty, expected at least one point");
    std::map<std::pair<int64_t, int64_t>, double> medians;         // (ctx, m) -> median_s
    std::vector<std::tuple<std::string, int64_t, double>> ratios;  // where, ctx, ratio / median
    for (size_t pos = 0; pos < curve->size(); ++pos) {
      const json* point = schema.entry(*curve, pos, "curve");
      if (point == nullptr) continue;
      const auto where = fmt::format("curve[{}]", pos);
      const auto median_s = schema.number(*point, "median_s", where, Bound::kPositive);
      const auto ratio = schema.number(*point, "ratio_to_m1", where, Bound::kPositive);
      const auto ctx = schema.integer(*point, "ctx", where, Bound::kPositive);
      const auto m = schema.integer(*point, "m", where, Bound::kPositive);
      if (const auto samples = schema.samples(*point, "samples_s", where)) {
        check_statistics(*point, *samples,
                         {{"median", "median_s"},
                          {"min", "min_s"},
                          {"max", "max_s"},
                          {"q1", "q1_s"},
                          {"q3", "q3_s"}},
                         where, true, schema);
      }
      if (ctx && m && median_s && !medians.emplace(std::pair{*ctx, *m}, *median_s).second) {
        schema.defect(fmt::format("{}: a second point for ctx {} m {}", where, *ctx, *m));
      }
      if (ctx && median_s && ratio) ratios.emplace_back(where, *ctx, *ratio / *median_s);
      if (schema.field(*point, "peak_rss_bytes", where, false) != nullptr) {
        if (const auto rss = schema.integer(*point, "peak_rss_bytes", where, Bound::kAny)) {
          point_rss.emplace_back(where, *rss);
        }
      }
    }
    for (const auto& [where, ctx, ratio_per_s] : ratios) {
      const auto m1 = medians.find({ctx, 1});
      if (m1 == medians.end()) {
        schema.defect(fmt::format("{}: ratio_to_m1 without an m = 1 point at ctx {}", where, ctx));
      } else if (!close(ratio_per_s, 1.0 / m1->second)) {
        schema.defect(
            fmt::format("{}: ratio_to_m1 is not median_s over the m = 1 point's "
                        "median_s ({})",
                        where, m1->second));
      }
    }
  }
  if (const json* drafters = schema.array(report, "drafters", "report", /*required=*/false)) {
    for (size_t pos = 0; pos < drafters->size(); ++pos) {
      const json* drafter = schema.entry(*drafters, pos, "drafters");
      if (drafter == nullptr) continue;
      const auto where = fmt::format("drafters[{}]", pos);
      schema.require(*drafter, where, {{"name", Type::kString}});
      // A drafter that proposed nothing (the harness writes "proposed": false) has no timing.
      const auto proposed = schema.boolean(*drafter, "proposed", where, /*required=*/false);
      if (proposed.value_or(true)) {
        const auto per_token = schema.number(*drafter, "per_token_s", where, Bound::kPositive);
        const auto samples = schema.samples(*drafter, "samples_per_token_s", where);
        if (per_token && samples && !close(*per_token, median(*samples))) {
          schema.defect(fmt::format("{}: per_token_s {} is not the median of its samples {}", where,
                                    *per_token, median(*samples)));
        }
        if (const json* sp = schema.object(*drafter, "per_token_spread", where, false);
            sp != nullptr && samples) {
          check_statistics(*sp, *samples, kSpreadKeys, where + ".per_token_spread", true, schema);
        }
      }
    }
  }
  std::vector<Violation> out;
  check_peak_rss(report, point_rss, schema, out);
  return out;
}

namespace {

// A roofline point's prefill figures (present when config.prefill_tokens > 0): the medians follow
// from their samples (and prefill_tok_s.median), prefill_gflop_s = prefill_flops /
// prefill_tokens x prefill_tok_s_median / 1e9, prefill_peak_fraction = prefill_gflop_s /
// peak_gflop_s; and where present, peak_int8_gop_s is the median of its samples and
// prefill_int8_fraction = prefill_gflop_s / peak_int8_gop_s.
void check_roofline_prefill(const json& point, const std::string& where, int64_t prefill_tokens,
                            std::optional<int64_t> prefill_flops, SchemaReader& schema) {
  const auto tok_s = schema.number(point, "prefill_tok_s_median", where, Bound::kPositive);
  const auto gflop_s = schema.number(point, "prefill_gflop_s", where, Bound::kPositive);
  const auto peak = schema.number(point, "peak_gflop_s", where, Bound::kPositive);
  const auto fraction = schema.number(point, "prefill_peak_fraction", where, Bound::kPositive);
  const auto tok_s_samples = schema.samples(point, "samples_prefill_tok_s", where);
  const auto peak_samples = schema.samples(point, "samples_peak_gflop_s", where);
  if (tok_s && tok_s_samples && !close(*tok_s, median(*tok_s_samples))) {
    schema.defect(
        fmt::format("{}: prefill_tok_s_median {} is not the median of samples_prefill_tok_s = {}",
                    where, *tok_s, median(*tok_s_samples)));
  }
  if (const json* summary = schema.object(point, "prefill_tok_s", where);
      summary && tok_s_samples) {
    check_statistics(*summary, *tok_s_samples, kSpreadKeys, where + ".prefill_tok_s", true, schema);
  }
  if (peak && peak_samples && !close(*peak, median(*peak_samples))) {
    schema.defect(fmt::format("{}: peak_gflop_s {} is not the median of samples_peak_gflop_s = {}",
                              where, *peak, median(*peak_samples)));
  }
  if (tok_s && gflop_s && prefill_flops) {
    const double expected =
        static_cast<double>(*prefill_flops) / static_cast<double>(prefill_tokens) * *tok_s / 1e9;
    if (!close(*gflop_s, expected)) {
      schema.defect(fmt::format(
          "{}: prefill_gflop_s {} is not prefill_flops / prefill_tokens x prefill_tok_s_median "
          "/ 1e9 = {}",
          where, *gflop_s, expected));
    }
  }
  if (gflop_s && peak && fraction && !close(*fraction, *gflop_s / *peak)) {
    schema.defect(
        fmt::format("{}: prefill_peak_fraction {} is not prefill_gflop_s / peak_gflop_s = {}",
                    where, *fraction, *gflop_s / *peak));
  }
  // The int8 peak (integer-weight models on a path with VNNI): the same two rules.
  if (!point.contains("peak_int8_gop_s") && !point.contains("prefill_int8_fraction")) return;
  const auto int8 = schema.number(point, "peak_int8_gop_s", where, Bound::kPositive);
  const auto int8_fraction = schema.number(point, "prefill_int8_fraction", where, Bound::kPositive);
  const auto int8_samples = schema.samples(point, "samples_peak_int8_gop_s", where);
  if (int8 && int8_samples && !close(*int8, median(*int8_samples))) {
    schema.defect(
        fmt::format("{}: peak_int8_gop_s {} is not the median of samples_peak_int8_gop_s = {}",
                    where, *int8, median(*int8_samples)));
  }
  if (gflop_s && int8 && int8_fraction && !close(*int8_fraction, *gflop_s / *int8)) {
    schema.defect(
        fmt::format("{}: prefill_int8_fraction {} is not prefill_gflop_s / peak_int8_gop_s = {}",
                    where, *int8_fraction, *gflop_s / *int8));
  }
}

}  // namespace

// A roofline report makes no comparison between arms: its structure and the arithmetic that ties
// its figures to its samples are checked (all SCHEMA): bytes_per_step = weight_bytes + kv_bytes;
// each bandwidth figure from samples_gb_s; each point's decode figures from samples_decode_tok_s,
// roofline_tok_s = gb_s_median of its (threads, regime) x 1e9 / bytes_per_step, fraction =
// decode_tok_s_median / roofline_tok_s, the same per regime in *_by_regime; with prefill on
// (config.prefill_tokens > 0), check_roofline_prefill's identities. Memory: MEMORY_CLAIM.
std::vector<Violation> check_roofline(const json& report, SchemaReader& schema) {
  int64_t prefill_tokens = 0;
  if (const json* config = schema.object(report, "config", "report")) {
    schema.require(*config, "config",
                   {{"threads", Type::kIntArray, Bound::kPositive},
                    {"ctx", Type::kInt, Bound::kPositive},
                    {"n_gen", Type::kInt, Bound::kPositive},
                    {"repeats", Type::kInt, Bound::kPositive}});
    prefill_tokens = schema
                         .integer(*config, "prefill_tokens", "config", Bound::kNonNegative,
                                  /*required=*/false)
                         .value_or(0);
  }
  const bool prefill = prefill_tokens > 0;
  const auto prefill_flops =
      prefill ? schema.integer(report, "prefill_flops", "report", Bound::kPositive) : std::nullopt;
  auto known_regime = [&](const std::optional<std::string>& regime, std::string_view where) {
    if (regime && *regime != "dram" && *regime != "in_cache") {
      schema.defect(fmt::format("{}: regime '{}', expected 'dram' or 'in_cache'", where, *regime));
      return false;
    }
    return regime.has_value();
  };
  const auto regime = schema.string(report, "regime", "report");
  const bool regime_ok = known_regime(regime, "report");
  const auto weight_bytes = schema.integer(report, "weight_bytes", "report", Bound::kPositive);
  const auto kv_bytes = schema.integer(report, "kv_bytes", "report");
  const auto step_bytes = schema.integer(report, "bytes_per_step", "report", Bound::kPositive);
  if (weight_bytes && kv_bytes && step_bytes && *step_bytes != *weight_bytes + *kv_bytes) {
    schema.defect(fmt::format("report: bytes_per_step is {}, but weight_bytes + kv_bytes is {}",
                              *step_bytes, *weight_bytes + *kv_bytes));
  }

  std::map<std::pair<int64_t, std::string>, double> gb_s;  // (threads, regime) -> median
  if (const json* bandwidth = schema.array(report, "bandwidth", "report")) {
    if (bandwidth->empty()) schema.defect("report: 'bandwidth' is empty, expected measurements");
    for (size_t pos = 0; pos < bandwidth->size(); ++pos) {
      const json* entry = schema.entry(*bandwidth, pos, "bandwidth");
      if (entry == nullptr) continue;
      const auto where = fmt::format("bandwidth[{}]", pos);
      const auto threads = schema.integer(*entry, "threads", where, Bound::kPositive);
      const auto entry_regime = schema.string(*entry, "regime", where);
      const bool entry_regime_ok = known_regime(entry_regime, where);
      const auto med = schema.number(*entry, "gb_s_median", where, Bound::kPositive);
      if (const auto samples = schema.samples(*entry, "samples_gb_s", where)) {
        check_statistics(*entry, *samples,
                         {{"median", "gb_s_median"}, {"min", "gb_s_min"}, {"max", "gb_s_max"}},
                         where, true, schema);
      }
      if (!threads || !entry_regime_ok || !med) continue;
      if (!gb_s.emplace(std::pair{*threads, *entry_regime}, *med).second) {
        schema.defect(fmt::format("{}: a second measurement for {} threads, regime '{}'", where,
                                  *threads, *entry_regime));
      }
    }
  }

  if (const json* points = schema.array(report, "points", "report")) {
    if (points->empty()) schema.defect("report: 'points' is empty, expected at least one point");
    std::set<int64_t> seen;  // threads
    for (size_t pos = 0; pos < points->size(); ++pos) {
      const json* point = schema.entry(*points, pos, "points");
      if (point == nullptr) continue;
      const auto where = fmt::format("points[{}]", pos);
      const auto threads = schema.integer(*point, "threads", where, Bound::kPositive);
      const auto point_regime = schema.string(*point, "regime", where);
      const auto roofline = schema.number(*point, "roofline_tok_s", where, Bound::kPositive);
      const auto achieved = schema.number(*point, "decode_tok_s_median", where, Bound::kPositive);
      const auto fraction = schema.number(*point, "fraction", where);
      if (const auto samples = schema.samples(*point, "samples_decode_tok_s", where)) {
        check_statistics(*point, *samples, {{"median", "decode_tok_s_median"}}, where, true,
                         schema);
        if (const json* summary = schema.object(*point, "decode_tok_s", where)) {
          check_statistics(*summary, *samples, kSpreadKeys, where + ".decode_tok_s", true, schema);
        }
      }
      if (threads && !seen.insert(*threads).second) {
        schema.defect(fmt::format("{}: a second point for {} threads", where, *threads));
      }
      if (prefill) check_roofline_prefill(*point, where, prefill_tokens, prefill_flops, schema);
      if (point_regime && regime_ok && *point_regime != *regime) {
        schema.defect(fmt::format("{}: regime '{}', but the report's roofline regime is '{}'",
                                  where, *point_regime, *regime));
        continue;
      }
      if (roofline && achieved && fraction && !close(*fraction, *achieved / *roofline)) {
        schema.defect(
            fmt::format("{}: fraction {} is not decode_tok_s_median / roofline_tok_s "
                        "= {}",
                        where, *fraction, *achieved / *roofline));
      }
      if (!threads || !point_regime || !roofline || !step_bytes) continue;
      const auto measured = gb_s.find({*threads, *point_regime});
      if (measured == gb_s.end()) {
        schema.defect(fmt::format("{}: no bandwidth measurement for {} threads, regime '{}'", where,
                                  *threads, *point_regime));
      } else if (const double expected = measured->second * 1e9 / static_cast<double>(*step_bytes);
                 !close(*roofline, expected)) {
        schema.defect(
            fmt::format("{}: roofline_tok_s {} is not gb_s_median x 1e9 / "
                        "bytes_per_step = {}",
                        where, *roofline, expected));
      }
      // The per-regime figures follow from the same measurements.
      const json* by_regime = schema.object(*point, "roofline_tok_s_by_regime", where, false);
      const json* fraction_by = schema.object(*point, "fraction_by_regime", where, false);
      for (const std::string name : {"dram", "in_cache"}) {
        const auto bw = gb_s.find({*threads, name});
        const bool measured_here = bw != gb_s.end();
        const double want = measured_here ? bw->second * 1e9 / static_cast<double>(*step_bytes) : 0;
        for (const auto& [object, what] : {std::pair{by_regime, "roofline_tok_s_by_regime"},
                                           std::pair{fraction_by, "fraction_by_regime"}}) {
          if (object == nullptr || !object->contains(name)) continue;
          const json& value = (*object)[name];
          const double expected = object == by_regime ? want : achieved.value_or(0) / want;
          if (!value.is_number() || !measured_here || !close(value.get<double>(), expected)) {
            schema.defect(fmt::format("{}: {}.{} is {} but the measurements give {}", where, what,
                                      name, value.dump(),
                                      measured_here ? fmt::format("{}", expected) : "nothing"));
          }
        }
      }
    }
  }
  std::vector<Violation> out;
  check_peak_rss(report, {}, schema, out);
  return out;
}

}  // namespace augur::bench::evidence
