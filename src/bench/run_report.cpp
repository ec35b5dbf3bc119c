#include "bench/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "bench/statistics.h"

namespace augur::bench::evidence {

namespace {

using nlohmann::json;

void read_config(const json& report, SchemaReader& schema, RunReport& run) {
  const json* config = schema.object(report, "config", "report");
  if (config == nullptr) return;
  schema.require(*config, "config",
                 {{"prompts_file", Type::kString},
                  {"prompts_sha256", Type::kString},
                  {"threads", Type::kInt, Bound::kPositive},
                  {"ubatch", Type::kInt, Bound::kPositive},
                  {"n_ctx", Type::kInt, Bound::kPositive},
                  {"seed", Type::kInt, Bound::kAny}});
  RunConfig& c = run.config;
  c.n_prompts = schema.integer(*config, "n_prompts", "config", Bound::kPositive).value_or(0);
  c.n_gen = schema.integer(*config, "n_gen", "config", Bound::kPositive).value_or(0);
  c.repeats = schema.integer(*config, "repeats", "config", Bound::kPositive).value_or(0);
  c.warmup = schema.integer(*config, "warmup", "config").value_or(0);
  c.n_ctx = schema.integer(*config, "n_ctx", "config", Bound::kPositive, false).value_or(0);
  c.ignore_eos =
      schema.boolean(*config, "ignore_eos", "config", /*required=*/false).value_or(false);
  if (const auto scope = schema.string(*config, "peak_rss_scope", "config", false);
      scope && *scope != "sample" && *scope != "process") {
    schema.defect(
        fmt::format("config: peak_rss_scope '{}', expected 'sample' or 'process'", *scope));
  }
  if (const json* sampler = schema.object(*config, "sampler", "config")) {
    schema.require(*sampler, "config.sampler",
                   {{"repeat_penalty", Type::kNumber, Bound::kPositive}});
    for (const char* key : {"top_p", "min_p"}) {
      if (const auto p = schema.number(*sampler, key, "config.sampler"); p && *p > 1) {
        schema.defect(fmt::format("config.sampler: '{}' is {}, expected a probability", key, *p));
      }
    }
    c.temperature = schema.number(*sampler, "temperature", "config.sampler").value_or(0);
    c.top_k = schema.integer(*sampler, "top_k", "config.sampler").value_or(0);
  }
}

void read_models(const json& report, RunReport& run) {
  // The header reader has checked each entry's structure.
  if (!report.contains("models") || !report["models"].is_array()) return;
  for (const json& model : report["models"]) {
    if (!model.is_object() || !model.contains("role") || !model["role"].is_string() ||
        !model.contains("bytes") || !model["bytes"].is_number_integer()) {
      continue;
    }
    run.model_bytes[model["role"].get<std::string>()] = model["bytes"].get<int64_t>();
  }
}

void read_arms(const json& report, SchemaReader& schema, RunReport& run) {
  const json* arms = schema.array(report, "arms", "report");
  if (arms == nullptr) return;
  if (arms->empty()) schema.defect("report: 'arms' is empty, expected at least one arm");
  for (size_t pos = 0; pos < arms->size(); ++pos) {
    const json* entry = schema.entry(*arms, pos, "arms");
    if (entry == nullptr) continue;
    const auto where = fmt::format("arms[{}]", pos);
    const size_t defects_before = schema.n_defects();
    const auto name = schema.string(*entry, "name", where);
    const auto kind = schema.string(*entry, "kind", where);
    const auto role = schema.string(*entry, "role", where);
    schema.string(*entry, "config_key", where);  // a label: read by no rule
    if (kind && *kind != "ar" && *kind != "spec") {
      schema.defect(fmt::format("{}: kind '{}', expected 'ar' or 'spec'", where, *kind));
    }
    if (role && *role != "baseline" && *role != "subject") {
      schema.defect(fmt::format("{}: role '{}', expected 'baseline' or 'subject'", where, *role));
    }
    ArmConfig config;
    if (kind) config.kind = *kind;
    if (kind == "spec") {
      config.drafter = schema.string(*entry, "drafter", where).value_or("");
      config.draft_max = schema.integer(*entry, "draft_max", where, Bound::kPositive).value_or(0);
      if (config.drafter == "layerskip") {
        config.layers = schema.integer(*entry, "layers", where, Bound::kPositive).value_or(0);
      }
      if (config.drafter == "ngram") {
        config.ngram_max = schema.integer(*entry, "ngram_max", where, Bound::kPositive).value_or(0);
      }
      if (config.drafter == "auto")
        config.sources = schema.string(*entry, "sources", where).value_or("");
    }
    if (schema.n_defects() != defects_before) continue;
    if (!run.arm_index.emplace(*name, run.arms.size()).second) {
      schema.defect(fmt::format("{}: arm name '{}' is used twice", where, *name));
      continue;
    }
    run.arms.push_back({*name, *role, config});
  }
}

std::optional<Sample> read_sample(const json& entry, size_t pos, SchemaReader& schema,
                                  const RunReport& run) {
  const auto where = fmt::format("samples[{}]", pos);
  const size_t defects_before = schema.n_defects();
  Sample s;
  s.index = pos;
  s.arm = schema.string(entry, "arm", where).value_or("");
  s.prompt = schema.string(entry, "prompt", where).value_or("");
  s.timing_scope = schema.string(entry, "timing_scope", where).value_or("");
  s.repeat = schema.integer(entry, "repeat", where, Bound::kAny).value_or(0);
  s.warmup = schema.boolean(entry, "warmup", where).value_or(false);
  s.greedy = schema.boolean(entry, "greedy", where).value_or(false);
  s.order = schema.integer(entry, "order", where).value_or(0);
  s.n_prompt = schema.integer(entry, "n_prompt", where, Bound::kPositive).value_or(0);
  s.n_gen = schema.integer(entry, "n_gen", where).value_or(0);
  s.cycles = schema.integer(entry, "cycles", where).value_or(0);
  s.drafted = schema.integer(entry, "drafted", where).value_or(0);
  s.accepted = schema.integer(entry, "accepted", where).value_or(0);
  s.accept_hist = schema.integers(entry, "accept_hist", where).value_or(std::vector<int64_t>{});
  s.tau = schema.number(entry, "tau", where).value_or(0);
  s.prefill_s = schema.number(entry, "prefill_s", where).value_or(0);
  s.prefill_tok_s = schema.number(entry, "prefill_tok_s", where).value_or(0);
  s.decode_s = schema.number(entry, "decode_s", where).value_or(0);
  s.decode_tok_s = schema.number(entry, "decode_tok_s", where).value_or(0);
  s.draft_s = schema.number(entry, "draft_s", where).value_or(0);
  s.verify_s = schema.number(entry, "verify_s", where).value_or(0);
  s.tokens = schema.integers(entry, "tokens", where).value_or(std::vector<int64_t>{});
  // Memory figures: their absence and value belong to MEMORY_CLAIM, only their type to SCHEMA.
  for (auto [key, out] :
       {std::pair{"peak_rss_bytes", &s.peak_rss_bytes}, std::pair{"arm_bytes", &s.arm_bytes}}) {
    if (schema.field(entry, key, where, false) != nullptr) {
      *out = schema.integer(entry, key, where, Bound::kAny);
    }
  }
  if (entry.contains("cache_memory")) s.cache_memory = &entry["cache_memory"];
  if (schema.n_defects() != defects_before) return std::nullopt;
  if (run.arm_index.count(s.arm) == 0) {
    schema.defect(fmt::format("{}: arm '{}' is not declared in 'arms'", where, s.arm));
    return std::nullopt;
  }
  const RunConfig& c = run.config;
  auto contradict = [&](const std::string& what) {
    schema.defect(fmt::format("{} ({} of arm '{}'): {}", where, s.label(), s.arm, what));
  };
  if (int64_t(s.tokens.size()) != s.n_gen) {
    contradict(fmt::format("n_gen is {} but 'tokens' holds {} tokens", s.n_gen, s.tokens.size()));
  }
  if (s.warmup != (s.repeat < 0)) {
    contradict(fmt::format("warmup is {} but repeat {} says {}", s.warmup, s.repeat,
                           s.repeat < 0 ? "warm-up" : "measured"));
  } else if (s.repeat < -c.warmup || s.repeat >= c.repeats) {
    contradict(fmt::format("repeat {} is outside the configured rounds {}..{}", s.repeat, -c.warmup,
                           c.repeats - 1));
  }
  if (s.greedy != (c.temperature <= 0)) {
    contradict(
        fmt::format("greedy is {} but config.sampler.temperature is {}", s.greedy, c.temperature));
  }
  if (s.n_gen > c.n_gen || (c.ignore_eos && s.n_gen != c.n_gen)) {
    contradict(fmt::format("n_gen {} but the run generates {}{} tokens", s.n_gen,
                           c.ignore_eos ? "exactly " : "at most ", c.n_gen));
  }
  const ArmConfig& arm = run.arm(s.arm).config;
  if (arm.kind == "ar" &&
      (s.cycles != 0 || s.drafted != 0 || s.accepted != 0 ||
       std::any_of(s.accept_hist.begin(), s.accept_hist.end(), [](int64_t n) { return n != 0; }))) {
    contradict(fmt::format("an ar arm's sample reports {} cycles, {} drafted, {} accepted",
                           s.cycles, s.drafted, s.accepted));
  }
  if (arm.kind == "spec" && int64_t(s.accept_hist.size()) != arm.draft_max + 1) {
    contradict(fmt::format("accept_hist has {} entries, but draft_max {} gives {}",
                           s.accept_hist.size(), arm.draft_max, arm.draft_max + 1));
  }
  return schema.n_defects() == defects_before ? std::optional(std::move(s)) : std::nullopt;
}

// A run measures every arm on every prompt in every round, arms in a rotating order within each
// (prompt, round), and a prompt is the same token sequence wherever it runs.
void check_completeness(const RunReport& run, SchemaReader& schema) {
  std::set<std::tuple<std::string, std::string, int64_t>> seen;  // arm, prompt, repeat
  std::map<std::pair<std::string, int64_t>, std::set<int64_t>> orders;
  std::map<std::string, std::pair<int64_t, size_t>> n_prompt;  // prompt -> (tokens, first index)
  std::set<std::string> prompts;
  for (const Sample& s : run.samples) {
    prompts.insert(s.prompt);
    if (!seen.emplace(s.arm, s.prompt, s.repeat).second) {
      schema.defect(
          fmt::format("samples[{}]: a second sample for arm '{}' {}", s.index, s.arm, s.label()));
    }
    if (!orders[{s.prompt, s.repeat}].insert(s.order).second ||
        s.order >= int64_t(run.arms.size())) {
      schema.defect(fmt::format("samples[{}]: order {} is not a free slot of 0..{} in {}", s.index,
                                s.order, run.arms.size() - 1, s.label()));
    }
    const auto [it, fresh] = n_prompt.emplace(s.prompt, std::pair{s.n_prompt, s.index});
    if (!fresh && it->second.first != s.n_prompt) {
      schema.defect(
          fmt::format("samples[{}]: prompt '{}' has {} tokens here but {} in "
                      "samples[{}]",
                      s.index, s.prompt, s.n_prompt, it->second.first, it->second.second));
    }
  }
  if (run.config.n_prompts > 0 && int64_t(prompts.size()) != run.config.n_prompts) {
    schema.defect(fmt::format("samples: {} distinct prompts, but config.n_prompts is {}",
                              prompts.size(), run.config.n_prompts));
  }
  size_t n_missing = 0;
  std::string first_missing;
  for (const Arm& arm : run.arms) {
    for (const std::string& prompt : prompts) {
      for (int64_t repeat = -run.config.warmup; repeat < run.config.repeats; ++repeat) {
        if (seen.count({arm.name, prompt, repeat}) != 0) continue;
        if (n_missing++ == 0) {
          first_missing = fmt::format("arm '{}' prompt '{}' repeat {}", arm.name, prompt, repeat);
        }
      }
    }
  }
  if (n_missing > 0) {
    schema.defect(
        fmt::format("samples: {} (arm, prompt, round) samples of the configured run are "
                    "missing; first: {}",
                    n_missing, first_missing));
  }
}

void read_summary(const json& report, SchemaReader& schema, RunReport& run) {
  const json* summary = schema.object(report, "summary", "report");
  if (summary == nullptr) return;
  if (const json* arms = schema.array(*summary, "arms", "summary")) {
    for (size_t pos = 0; pos < arms->size(); ++pos) {
      const json* entry = schema.entry(*arms, pos, "summary.arms");
      if (entry == nullptr) continue;
      const auto where = fmt::format("summary.arms[{}]", pos);
      const auto name = schema.string(*entry, "name", where);
      if (!name) continue;
      if (run.arm_index.count(*name) == 0) {
        schema.defect(fmt::format("{}: arm '{}' is not declared in 'arms'", where, *name));
      } else if (!run.summary_arms.emplace(*name, entry).second) {
        schema.defect(fmt::format("{}: arm '{}' is summarised twice", where, *name));
      }
    }
    for (const Arm& arm : run.arms) {
      if (run.summary_arms.count(arm.name) == 0) {
        schema.defect(fmt::format("summary.arms: no entry for arm '{}'", arm.name));
      }
    }
  }
  if (const json* speedups = schema.array(*summary, "speedups", "summary")) {
    for (size_t pos = 0; pos < speedups->size(); ++pos) {
      const json* entry = schema.entry(*speedups, pos, "summary.speedups");
      if (entry == nullptr) continue;
      const auto where = fmt::format("summary.speedups[{}]", pos);
      const auto subject = schema.string(*entry, "subject", where);
      const auto baseline = schema.string(*entry, "baseline", where);
      const auto metric = schema.string(*entry, "metric", where);
      const auto value = schema.number(*entry, "value", where, Bound::kPositive);
      if (!subject || !baseline || !metric || !value) continue;
      const size_t defects_before = schema.n_defects();
      for (const std::string* name : {&*subject, &*baseline}) {
        if (run.arm_index.count(*name) != 0) continue;
        schema.defect(fmt::format("{}: {} '{}' is not declared in 'arms'", where,
                                  name == &*subject ? "subject" : "baseline", *name));
      }
      if (schema.n_defects() == defects_before) {
        run.speedups.push_back({pos, *subject, *baseline, *metric, *value});
      }
    }
  }
  if (const json* withheld = schema.array(*summary, "withheld", "summary")) {
    for (size_t pos = 0; pos < withheld->size(); ++pos) {
      if (const json* entry = schema.entry(*withheld, pos, "summary.withheld")) {
        schema.require(*entry, fmt::format("summary.withheld[{}]", pos),
                       {{"rule", Type::kString}, {"reason", Type::kString}});
      }
    }
  }
  // The harness's own equivalence findings: structure only; the rule re-derives them.
  if (const json* equivalence = schema.array(*summary, "equivalence", "summary")) {
    for (size_t pos = 0; pos < equivalence->size(); ++pos) {
      if (const json* entry = schema.entry(*equivalence, pos, "summary.equivalence")) {
        schema.require(*entry, fmt::format("summary.equivalence[{}]", pos),
                       {{"arm", Type::kString},
                        {"prompt", Type::kString},
                        {"repeat", Type::kInt, Bound::kAny},
                        {"first_mismatch", Type::kInt}});
      }
    }
  }
}

}  // namespace

std::string ArmConfig::text() const {
  if (kind != "spec") return kind;
  std::string out = fmt::format("spec drafter={} draft_max={}", drafter, draft_max);
  if (layers > 0) out += fmt::format(" layers={}", layers);
  if (ngram_max > 0) out += fmt::format(" ngram_max={}", ngram_max);
  if (!sources.empty()) out += fmt::format(" sources={}", sources);
  return out;
}

std::string Sample::label() const {
  return fmt::format("prompt '{}' repeat {}{}", prompt, repeat, warmup ? " (warm-up)" : "");
}

std::vector<const Sample*> RunReport::of(const std::string& arm, bool with_warmups) const {
  std::vector<const Sample*> out;
  for (const Sample& s : samples) {
    if (s.arm == arm && (with_warmups || !s.warmup)) out.push_back(&s);
  }
  return out;
}

RunReport read_run(const json& report, SchemaReader& schema, bool with_summary) {
  RunReport run;
  read_config(report, schema, run);
  read_models(report, run);
  read_arms(report, schema, run);
  if (const json* samples = schema.array(report, "samples", "report")) {
    for (size_t pos = 0; pos < samples->size(); ++pos) {
      const json* entry = schema.entry(*samples, pos, "samples");
      if (entry == nullptr) continue;
      if (auto sample = read_sample(*entry, pos, schema, run)) {
        run.samples.push_back(std::move(*sample));
      }
    }
  }
  if (schema.clean()) check_completeness(run, schema);
  if (with_summary) read_summary(report, schema, run);
  return run;
}

json derive_arm_summary(const RunReport& run, const std::string& arm) {
  std::vector<double> decode_tok_s, prefill_tok_s, n_gen;
  std::map<std::string, std::pair<double, double>> prefill_range;  // prompt -> (min, max)
  int64_t cycles = 0, drafted = 0, accepted = 0;
  std::vector<int64_t> tau_hist;
  for (const Sample* s : run.of(arm)) {
    decode_tok_s.push_back(s->decode_tok_s);
    prefill_tok_s.push_back(s->prefill_tok_s);
    n_gen.push_back(double(s->n_gen));
    auto [it, fresh] = prefill_range.emplace(s->prompt, std::pair{s->prefill_s, s->prefill_s});
    it->second = {std::min(it->second.first, s->prefill_s),
                  std::max(it->second.second, s->prefill_s)};
    cycles += s->cycles;
    drafted += s->drafted;
    accepted += s->accepted;
    if (tau_hist.size() < s->accept_hist.size()) tau_hist.resize(s->accept_hist.size(), 0);
    for (size_t j = 0; j < s->accept_hist.size(); ++j) tau_hist[j] += s->accept_hist[j];
  }
  double spread_max = 0;
  for (const auto& [prompt, range] : prefill_range) {
    if (range.first > 0) spread_max = std::max(spread_max, range.second / range.first);
  }
  int64_t peak_rss = 0;
  std::optional<int64_t> arm_bytes;
  for (const Sample* s : run.of(arm, /*with_warmups=*/true)) {
    peak_rss = std::max(peak_rss, s->peak_rss_bytes.value_or(0));
    if (s->arm_bytes) arm_bytes = std::max(arm_bytes.value_or(0), *s->arm_bytes);
  }
  json out = {{"name", arm},
              {"n_samples", decode_tok_s.size()},
              {"decode_tokens_median", n_gen.empty() ? 0.0 : median(n_gen)},
              {"decode_tok_s", spread(decode_tok_s)},
              {"prefill_tok_s", spread(prefill_tok_s)},
              {"prefill_spread_max", spread_max},
              {"cycles", cycles},
              {"drafted", drafted},
              {"accepted", accepted},
              {"accept_rate", drafted > 0 ? double(accepted) / double(drafted) : 0.0},
              {"tau_mean", cycles > 0 ? double(accepted + cycles) / double(cycles) : 0.0},
              {"tau_hist", tau_hist},
              {"peak_rss_bytes", peak_rss}};
  if (arm_bytes) out["arm_bytes"] = *arm_bytes;
  return out;
}

bool decodes_deterministically(const RunReport& run) {
  if (run.config.temperature <= 0 || run.config.top_k == 1) return true;
  std::map<std::string, std::vector<const Sample*>> by_prompt;
  for (const Sample& s : run.samples) {
    if (run.arm(s.arm).config.kind == "ar") by_prompt[s.prompt].push_back(&s);
  }
  if (by_prompt.empty()) return false;
  for (const auto& [prompt, samples] : by_prompt) {
    if (samples.size() < 2) return false;
    for (const Sample* s : samples) {
      if (s->tokens != samples[0]->tokens) return false;
    }
  }
  return true;
}

}  // namespace augur::bench::evidence
