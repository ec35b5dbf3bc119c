#include "bench/evidence_gate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

namespace augur::bench {

namespace {

using nlohmann::json;

constexpr std::string_view kSchemaName = "augur.bench/1";
constexpr std::string_view kDecodeMetric = "decode_tok_s_median";
constexpr std::string_view kDecodeOnly = "decode_only";
constexpr size_t kMinRepeats = 5;        // measured repeats per (arm, prompt) behind a claim
constexpr double kMinDecodeTokens = 32;  // median n_gen behind a claim
constexpr double kMaxPrefillSpread = 3;  // max/min prefill_s of one prompt
constexpr size_t kMaxSchemaLines = 20;   // a broken harness breaks every sample: fold the rest

enum class Type { kString, kBool, kInt, kNumber, kObject, kArray, kIntArray };
enum class Bound { kAny, kNonNegative, kPositive };

// A field whose presence and type SCHEMA checks but whose value no rule reads.
struct FieldSpec {
  std::string_view key;
  Type type;
  Bound bound = Bound::kNonNegative;  // for numbers, integers and integer arrays
};

const char* bound_text(Bound bound) {
  switch (bound) {
    case Bound::kAny: return "";
    case Bound::kNonNegative: return " >= 0";
    case Bound::kPositive: return " > 0";
  }
  return "";
}

template <typename T>
bool within(T value, Bound bound) {
  return bound == Bound::kAny || (bound == Bound::kNonNegative && value >= 0) ||
         (bound == Bound::kPositive && value > 0);
}

std::string describe(const json& value) {
  if (value.is_string() || value.is_number() || value.is_boolean()) {
    return fmt::format("{} {}", value.type_name(), value.dump());
  }
  if (value.is_null()) return "null";
  return std::string("an ") + value.type_name();
}

// Reads typed fields and records each structural defect as one SCHEMA line ("where: what").
// Readers return nullopt / nullptr for a missing (JSON null counts as missing) or mistyped field.
class SchemaReader {
 public:
  void defect(std::string message) {
    ++n_defects_;
    if (messages_.size() < kMaxSchemaLines) messages_.push_back(std::move(message));
  }
  bool clean() const { return n_defects_ == 0; }
  size_t n_defects() const { return n_defects_; }
  void emit(std::vector<Violation>& out) const {
    for (const auto& message : messages_) out.push_back({"SCHEMA", message});
    if (n_defects_ > messages_.size()) {
      out.push_back({"SCHEMA", fmt::format("{} more structural defects not listed",
                                           n_defects_ - messages_.size())});
    }
  }

  const json* field(const json& object, std::string_view key, std::string_view where,
                    bool required = true) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
      if (required) defect(fmt::format("{}: missing '{}'", where, key));
      return nullptr;
    }
    return &*it;
  }
  // Element `pos` of `array` (named `name`) when it is an object.
  const json* entry(const json& array, size_t pos, std::string_view name) {
    const json& value = array[pos];
    if (value.is_object()) return &value;
    defect(fmt::format("{}[{}] is {}, expected an object", name, pos, describe(value)));
    return nullptr;
  }
  void require(const json& object, std::string_view where, std::initializer_list<FieldSpec> specs) {
    for (const FieldSpec& spec : specs) read(object, spec, where, true);
  }

  const json* object(const json& parent, std::string_view key, std::string_view where,
                     bool required = true) {
    return read(parent, {key, Type::kObject}, where, required) ? &parent[key] : nullptr;
  }
  const json* array(const json& parent, std::string_view key, std::string_view where,
                    bool required = true) {
    return read(parent, {key, Type::kArray}, where, required) ? &parent[key] : nullptr;
  }
  std::optional<std::string> string(const json& parent, std::string_view key,
                                    std::string_view where, bool required = true) {
    if (!read(parent, {key, Type::kString}, where, required)) return std::nullopt;
    return parent[key].get<std::string>();
  }
  std::optional<bool> boolean(const json& parent, std::string_view key, std::string_view where) {
    if (!read(parent, {key, Type::kBool}, where, true)) return std::nullopt;
    return parent[key].get<bool>();
  }
  std::optional<int64_t> integer(const json& parent, std::string_view key, std::string_view where,
                                 Bound bound = Bound::kNonNegative, bool required = true) {
    if (!read(parent, {key, Type::kInt, bound}, where, required)) return std::nullopt;
    return parent[key].get<int64_t>();
  }
  std::optional<double> number(const json& parent, std::string_view key, std::string_view where,
                               Bound bound = Bound::kNonNegative, bool required = true) {
    if (!read(parent, {key, Type::kNumber, bound}, where, required)) return std::nullopt;
    return parent[key].get<double>();
  }
  std::optional<std::vector<int64_t>> integers(const json& parent, std::string_view key,
                                               std::string_view where) {
    if (!read(parent, {key, Type::kIntArray}, where, true)) return std::nullopt;
    return parent[key].get<std::vector<int64_t>>();
  }

 private:
  // True when the field is present with the spec's type and bound; a defect otherwise (a missing
  // field only when required).
  bool read(const json& parent, const FieldSpec& spec, std::string_view where, bool required) {
    const json* value = field(parent, spec.key, where, required);
    if (value == nullptr) return false;
    const auto what = fmt::format("{}: '{}'", where, spec.key);
    switch (spec.type) {
      case Type::kString: return expect(value->is_string(), what, *value, "a string");
      case Type::kBool: return expect(value->is_boolean(), what, *value, "a boolean");
      case Type::kObject: return expect(value->is_object(), what, *value, "an object");
      case Type::kArray: return expect(value->is_array(), what, *value, "an array");
      case Type::kInt: return integer_ok(*value, what, spec.bound);
      case Type::kNumber: {
        const bool finite = value->is_number() && std::isfinite(value->get<double>());
        if (!finite) {
          return expect(false, what, *value,
                        fmt::format("a finite number{}", bound_text(spec.bound)));
        }
        return expect(within(value->get<double>(), spec.bound), what, *value,
                      fmt::format("a number{}", bound_text(spec.bound)));
      }
      case Type::kIntArray: {
        if (!expect(value->is_array(), what, *value, "an array")) return false;
        for (size_t pos = 0; pos < value->size(); ++pos) {  // one line per array, not per element
          if (!integer_ok((*value)[pos], fmt::format("{}[{}]", what, pos), spec.bound)) {
            return false;
          }
        }
        return true;
      }
    }
    return false;
  }
  bool integer_ok(const json& value, std::string_view what, Bound bound) {
    const bool fits = value.is_number_integer() &&
                      !(value.is_number_unsigned() &&
                        value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()));
    return expect(fits && within(value.get<int64_t>(), bound), what, value,
                  fmt::format("an integer{}", bound_text(bound)));
  }
  bool expect(bool ok, std::string_view what, const json& value, std::string_view expected) {
    if (!ok) defect(fmt::format("{} is {}, expected {}", what, describe(value), expected));
    return ok;
  }

  std::vector<std::string> messages_;
  size_t n_defects_ = 0;
};

// ---- the parts of a "run" report the rules read ----

struct Arm {
  std::string name;
  std::string kind;  // "ar" | "spec"
  std::string role;  // "baseline" | "subject"
  std::string config_key;
};

struct Sample {
  size_t index = 0;  // position in "samples", for messages
  std::string arm;
  std::string prompt;
  std::string timing_scope;
  int64_t repeat = 0;  // any integer: the harness numbers warm-ups below 0
  bool warmup = false;
  bool greedy = false;
  int64_t n_gen = 0;
  int64_t cycles = 0;
  int64_t drafted = 0;
  double prefill_s = 0;
  double decode_tok_s = 0;
  std::optional<int64_t> peak_rss_bytes;  // absent: judged by MEMORY_CLAIM, not SCHEMA
  std::vector<int64_t> tokens;            // [n_gen]
};

struct ArmSummary {
  std::string name;
  std::optional<double> decode_tok_s_median;  // absent: judged by DECODE_ONLY_MISSING
  std::optional<int64_t> peak_rss_bytes;      // absent: judged by MEMORY_CLAIM
};

struct Speedup {
  size_t index = 0;
  std::string subject;
  std::string baseline;
  std::string metric;
  double value = 0;
};

struct Run {
  std::vector<Arm> arms;
  std::map<std::string, size_t> arm_index;  // name -> position in arms
  std::vector<Sample> samples;
  std::vector<ArmSummary> summaries;
  std::vector<Speedup> speedups;

  const Arm& arm(const std::string& name) const { return arms[arm_index.at(name)]; }
  const ArmSummary* summary(const std::string& name) const {
    for (const ArmSummary& entry : summaries) {
      if (entry.name == name) return &entry;
    }
    return nullptr;
  }
};

std::string sample_label(const Sample& sample) {
  return fmt::format("prompt '{}' repeat {}{}", sample.prompt, sample.repeat,
                     sample.warmup ? " (warm-up)" : "");
}

// A peak_rss_bytes field: its absence and value belong to MEMORY_CLAIM, only its type to SCHEMA.
// False when it is present but mistyped.
bool read_peak_rss(const json& object, std::string_view where, SchemaReader& schema,
                   std::optional<int64_t>& peak_rss) {
  if (schema.field(object, "peak_rss_bytes", where, false) == nullptr) return true;
  peak_rss = schema.integer(object, "peak_rss_bytes", where, Bound::kAny);
  return peak_rss.has_value();
}

void read_header(const json& report, SchemaReader& schema) {
  schema.require(report, "report", {{"created", Type::kString}});
  if (const json* machine = schema.object(report, "machine", "report")) {
    schema.require(*machine, "machine",
                   {{"cpu", Type::kString},
                    {"cores", Type::kInt, Bound::kPositive},
                    {"threads_used", Type::kInt, Bound::kPositive},
                    {"memory_bytes", Type::kInt, Bound::kPositive},
                    {"isa", Type::kString},
                    {"os", Type::kString}});
  }
  if (const json* build = schema.object(report, "build", "report")) {
    schema.require(*build, "build",
                   {{"commit", Type::kString},
                    {"dirty", Type::kBool},
                    {"compiler", Type::kString},
                    {"build_type", Type::kString},
                    {"flags", Type::kString}});
  }
  if (const json* models = schema.array(report, "models", "report")) {
    for (size_t pos = 0; pos < models->size(); ++pos) {
      if (const json* model = schema.entry(*models, pos, "models")) {
        schema.require(*model, fmt::format("models[{}]", pos),
                       {{"role", Type::kString},
                        {"path", Type::kString},
                        {"sha256", Type::kString},
                        {"bytes", Type::kInt},
                        {"arch", Type::kString},
                        {"tensor_types", Type::kObject}});
      }
    }
  }
}

void read_run_config(const json& report, SchemaReader& schema) {
  const json* config = schema.object(report, "config", "report");
  if (config == nullptr) return;
  schema.require(*config, "config",
                 {{"prompts_file", Type::kString},
                  {"prompts_sha256", Type::kString},
                  {"n_prompts", Type::kInt, Bound::kPositive},
                  {"n_gen", Type::kInt, Bound::kPositive},
                  {"repeats", Type::kInt, Bound::kPositive},
                  {"warmup", Type::kInt},
                  {"threads", Type::kInt, Bound::kPositive},
                  {"ubatch", Type::kInt, Bound::kPositive},
                  {"n_ctx", Type::kInt, Bound::kPositive},
                  {"seed", Type::kInt, Bound::kAny}});
  if (const json* sampler = schema.object(*config, "sampler", "config")) {
    schema.require(*sampler, "config.sampler",
                   {{"temperature", Type::kNumber},
                    {"top_k", Type::kInt},
                    {"top_p", Type::kNumber},
                    {"min_p", Type::kNumber},
                    {"repeat_penalty", Type::kNumber}});
  }
}

void read_arms(const json& report, SchemaReader& schema, Run& run) {
  const json* arms = schema.array(report, "arms", "report");
  if (arms == nullptr) return;
  if (arms->empty()) schema.defect("report: 'arms' is empty, expected at least one arm");
  for (size_t pos = 0; pos < arms->size(); ++pos) {
    const json* entry = schema.entry(*arms, pos, "arms");
    if (entry == nullptr) continue;
    const auto where = fmt::format("arms[{}]", pos);
    const auto name = schema.string(*entry, "name", where);
    const auto kind = schema.string(*entry, "kind", where);
    const auto role = schema.string(*entry, "role", where);
    const auto config_key = schema.string(*entry, "config_key", where);
    if (kind && *kind != "ar" && *kind != "spec") {
      schema.defect(fmt::format("{}: kind '{}', expected 'ar' or 'spec'", where, *kind));
    }
    if (role && *role != "baseline" && *role != "subject") {
      schema.defect(fmt::format("{}: role '{}', expected 'baseline' or 'subject'", where, *role));
    }
    if (kind == "spec") {
      schema.require(*entry, where,
                     {{"drafter", Type::kString}, {"draft_max", Type::kInt, Bound::kPositive}});
    }
    if (!name || !kind || !role || !config_key) continue;
    if (!run.arm_index.emplace(*name, run.arms.size()).second) {
      schema.defect(fmt::format("{}: arm name '{}' is used twice", where, *name));
      continue;
    }
    run.arms.push_back({*name, *kind, *role, *config_key});
  }
}

void read_samples(const json& report, SchemaReader& schema, Run& run) {
  const json* samples = schema.array(report, "samples", "report");
  if (samples == nullptr) return;
  std::set<std::tuple<std::string, std::string, bool, int64_t>> seen;  // arm, prompt, warmup, rep
  for (size_t pos = 0; pos < samples->size(); ++pos) {
    const json* entry = schema.entry(*samples, pos, "samples");
    if (entry == nullptr) continue;
    const auto where = fmt::format("samples[{}]", pos);
    const size_t defects_before = schema.n_defects();
    schema.require(*entry, where,
                   {{"order", Type::kInt},
                    {"n_prompt", Type::kInt},
                    {"decode_s", Type::kNumber},
                    {"accepted", Type::kInt},
                    {"tau", Type::kNumber},
                    {"accept_hist", Type::kIntArray}});
    Sample sample;
    sample.index = pos;
    const auto arm = schema.string(*entry, "arm", where);
    const auto prompt = schema.string(*entry, "prompt", where);
    const auto scope = schema.string(*entry, "timing_scope", where);
    const auto repeat = schema.integer(*entry, "repeat", where, Bound::kAny);
    const auto warmup = schema.boolean(*entry, "warmup", where);
    const auto greedy = schema.boolean(*entry, "greedy", where);
    const auto n_gen = schema.integer(*entry, "n_gen", where);
    const auto cycles = schema.integer(*entry, "cycles", where);
    const auto drafted = schema.integer(*entry, "drafted", where);
    const auto prefill_s = schema.number(*entry, "prefill_s", where);
    const auto decode_tok_s = schema.number(*entry, "decode_tok_s", where);
    auto tokens = schema.integers(*entry, "tokens", where);
    read_peak_rss(*entry, where, schema, sample.peak_rss_bytes);
    if (schema.n_defects() != defects_before) continue;
    if (run.arm_index.count(*arm) == 0) {
      schema.defect(fmt::format("{}: arm '{}' is not declared in 'arms'", where, *arm));
      continue;
    }
    if (int64_t(tokens->size()) != *n_gen) {
      schema.defect(fmt::format("{}: n_gen is {} but 'tokens' holds {} tokens", where, *n_gen,
                                tokens->size()));
      continue;
    }
    if (!seen.emplace(*arm, *prompt, *warmup, *repeat).second) {
      schema.defect(fmt::format("{}: a second {}sample for arm '{}' prompt '{}' repeat {}", where,
                                *warmup ? "warm-up " : "", *arm, *prompt, *repeat));
      continue;
    }
    sample.arm = *arm;
    sample.prompt = *prompt;
    sample.timing_scope = *scope;
    sample.repeat = *repeat;
    sample.warmup = *warmup;
    sample.greedy = *greedy;
    sample.n_gen = *n_gen;
    sample.cycles = *cycles;
    sample.drafted = *drafted;
    sample.prefill_s = *prefill_s;
    sample.decode_tok_s = *decode_tok_s;
    sample.tokens = std::move(*tokens);
    run.samples.push_back(std::move(sample));
  }
}

void read_summary_arms(const json& summary, SchemaReader& schema, Run& run) {
  const json* arms = schema.array(summary, "arms", "summary");
  if (arms == nullptr) return;
  for (size_t pos = 0; pos < arms->size(); ++pos) {
    const json* entry = schema.entry(*arms, pos, "summary.arms");
    if (entry == nullptr) continue;
    const auto where = fmt::format("summary.arms[{}]", pos);
    schema.require(*entry, where,
                   {{"n_samples", Type::kInt},
                    {"decode_tokens_median", Type::kNumber},
                    {"prefill_tok_s", Type::kObject},
                    {"prefill_spread_max", Type::kNumber},
                    {"cycles", Type::kInt},
                    {"drafted", Type::kInt},
                    {"accepted", Type::kInt},
                    {"tau_mean", Type::kNumber},
                    {"tau_hist", Type::kIntArray}});
    ArmSummary arm;
    // decode_tok_s.median may be absent (DECODE_ONLY_MISSING judges that), never mistyped.
    if (const json* decode = schema.object(*entry, "decode_tok_s", where, false)) {
      arm.decode_tok_s_median =
          schema.number(*decode, "median", where + ".decode_tok_s", Bound::kNonNegative, false);
    }
    read_peak_rss(*entry, where, schema, arm.peak_rss_bytes);
    const auto name = schema.string(*entry, "name", where);
    if (!name) continue;
    if (run.arm_index.count(*name) == 0) {
      schema.defect(fmt::format("{}: arm '{}' is not declared in 'arms'", where, *name));
    } else if (run.summary(*name) != nullptr) {
      schema.defect(fmt::format("{}: arm '{}' is summarised twice", where, *name));
    } else {
      arm.name = *name;
      run.summaries.push_back(std::move(arm));
    }
  }
  for (const Arm& arm : run.arms) {
    if (run.summary(arm.name) == nullptr) {
      schema.defect(fmt::format("summary.arms: no entry for arm '{}'", arm.name));
    }
  }
}

void read_summary(const json& report, SchemaReader& schema, Run& run) {
  const json* summary = schema.object(report, "summary", "report");
  if (summary == nullptr) return;
  read_summary_arms(*summary, schema, run);

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

// ---- evidence rules over a structurally sound run ----

// True when a and b agree to a relative 1e-6 (both are written from the same doubles).
bool close(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max({std::abs(a), std::abs(b), 1e-300});
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Arms that a speedup compares, in first-claim order, with the claim that brings them in.
std::vector<std::pair<std::string, std::string>> compared_arms(const Run& run) {
  std::vector<std::pair<std::string, std::string>> result;
  for (const Speedup& speedup : run.speedups) {
    for (const std::string* name : {&speedup.subject, &speedup.baseline}) {
      const bool listed = std::any_of(result.begin(), result.end(),
                                      [&](const auto& entry) { return entry.first == *name; });
      if (listed) continue;
      result.emplace_back(*name, fmt::format("compared in speedup '{}' over '{}'", speedup.subject,
                                             speedup.baseline));
    }
  }
  return result;
}

// Measured samples of one arm grouped by prompt.
std::map<std::string, std::vector<const Sample*>> measured_by_prompt(const Run& run,
                                                                     const std::string& arm) {
  std::map<std::string, std::vector<const Sample*>> result;
  for (const Sample& sample : run.samples) {
    if (sample.arm == arm && !sample.warmup) result[sample.prompt].push_back(&sample);
  }
  return result;
}

void check_spec_ran(const Run& run, std::vector<Violation>& out) {
  for (const Arm& arm : run.arms) {
    if (arm.kind != "spec") continue;
    int64_t cycles = 0, drafted = 0, n_measured = 0;
    for (const Sample& sample : run.samples) {
      if (sample.arm != arm.name || sample.warmup) continue;
      cycles += sample.cycles;
      drafted += sample.drafted;
      ++n_measured;
    }
    if (n_measured == 0) {
      out.push_back(
          {"SPEC_NEVER_RAN", fmt::format("spec arm '{}' has no measured samples", arm.name)});
    } else if (cycles == 0 || drafted == 0) {
      out.push_back({"SPEC_NEVER_RAN",
                     fmt::format("spec arm '{}': its {} measured samples sum to {} cycles and {} "
                                 "drafted tokens; the drafter never ran, so it measured plain "
                                 "decoding",
                                 arm.name, n_measured, cycles, drafted)});
    }
  }
}

void check_baseline_as_subject(const Run& run, std::vector<Violation>& out) {
  for (const Arm& arm : run.arms) {
    if (arm.kind == "ar" && arm.role == "subject") {
      out.push_back({"BASELINE_AS_SUBJECT",
                     fmt::format("ar arm '{}' has role 'subject'; autoregressive decoding is the "
                                 "baseline",
                                 arm.name)});
    }
  }
  for (const Speedup& speedup : run.speedups) {
    if (run.arm(speedup.subject).kind == "ar") {
      out.push_back({"BASELINE_AS_SUBJECT",
                     fmt::format("summary.speedups[{}] claims a speedup for ar arm '{}' over '{}'",
                                 speedup.index, speedup.subject, speedup.baseline)});
    }
  }
}

void check_self_comparison(const Run& run, std::vector<Violation>& out) {
  for (const Speedup& speedup : run.speedups) {
    const Arm& subject = run.arm(speedup.subject);
    const Arm& baseline = run.arm(speedup.baseline);
    if (speedup.subject == speedup.baseline) {
      out.push_back(
          {"SELF_COMPARISON", fmt::format("summary.speedups[{}] compares arm '{}' with itself",
                                          speedup.index, speedup.subject)});
    } else if (subject.config_key == baseline.config_key) {
      out.push_back(
          {"SELF_COMPARISON",
           fmt::format("summary.speedups[{}] compares '{}' with '{}', which share "
                       "config_key '{}' (the same path)",
                       speedup.index, speedup.subject, speedup.baseline, subject.config_key)});
    }
  }
}

void check_samples(const Run& run, std::vector<Violation>& out) {
  const auto compared = compared_arms(run);
  // Every prompt any compared arm ran: an arm that skipped one compares a different workload.
  std::set<std::string> prompts;
  for (const Sample& sample : run.samples) {
    const bool in_claim = std::any_of(compared.begin(), compared.end(),
                                      [&](const auto& entry) { return entry.first == sample.arm; });
    if (in_claim && !sample.warmup) prompts.insert(sample.prompt);
  }
  for (const auto& [arm, why] : compared) {
    const auto by_prompt = measured_by_prompt(run, arm);
    std::vector<std::string> short_prompts;  // "p01 (4)"
    for (const std::string& prompt : prompts) {
      const auto it = by_prompt.find(prompt);
      const size_t n = it == by_prompt.end() ? 0 : it->second.size();
      if (n < kMinRepeats) short_prompts.push_back(fmt::format("'{}' ({})", prompt, n));
    }
    if (by_prompt.empty()) {
      out.push_back({"SAMPLES", fmt::format("arm '{}' ({}) has no measured samples", arm, why)});
    } else if (!short_prompts.empty()) {
      out.push_back(
          {"SAMPLES", fmt::format("arm '{}' ({}) has fewer than {} measured repeats for {} "
                                  "prompt(s): {}",
                                  arm, why, kMinRepeats, short_prompts.size(),
                                  fmt::join(short_prompts, ", "))});
    }
  }
}

void check_decode_tokens(const Run& run, std::vector<Violation>& out) {
  for (const auto& [arm, why] : compared_arms(run)) {
    std::vector<double> n_gen;
    for (const Sample& sample : run.samples) {
      if (sample.arm == arm && !sample.warmup) n_gen.push_back(double(sample.n_gen));
    }
    if (n_gen.empty()) continue;  // SAMPLES reports it
    const double n_gen_median = median(n_gen);
    if (n_gen_median < kMinDecodeTokens) {
      out.push_back({"DECODE_TOKENS",
                     fmt::format("arm '{}' ({}) decodes a median of {:g} tokens per measured "
                                 "sample; a speed claim needs at least {:g}",
                                 arm, why, n_gen_median, kMinDecodeTokens)});
    }
  }
}

void check_decode_only(const Run& run, std::vector<Violation>& out) {
  for (const Speedup& speedup : run.speedups) {
    if (speedup.metric != kDecodeMetric) {
      out.push_back({"DECODE_ONLY_MISSING",
                     fmt::format("summary.speedups[{}] ('{}' over '{}') uses metric '{}'; only "
                                 "'{}' is a claim",
                                 speedup.index, speedup.subject, speedup.baseline, speedup.metric,
                                 kDecodeMetric)});
    }
  }
  for (const auto& [arm, why] : compared_arms(run)) {
    const ArmSummary* summary = run.summary(arm);
    if (summary == nullptr || !summary->decode_tok_s_median) {
      out.push_back({"DECODE_ONLY_MISSING",
                     fmt::format("arm '{}' ({}) has no summary decode_tok_s.median", arm, why)});
    }
  }
}

// A claimed number must be the one its samples give: each compared arm's summary median is the
// median of its measured decode_tok_s, and a speedup's value is the ratio of those medians.
void check_speedup_value(const Run& run, std::vector<Violation>& out) {
  std::map<std::string, double> from_samples;
  for (const auto& [arm, why] : compared_arms(run)) {
    std::vector<double> rates;
    for (const Sample& sample : run.samples) {
      if (sample.arm == arm && !sample.warmup) rates.push_back(sample.decode_tok_s);
    }
    if (rates.empty()) continue;  // SAMPLES reports it
    from_samples[arm] = median(rates);
    const ArmSummary* summary = run.summary(arm);
    if (summary != nullptr && summary->decode_tok_s_median &&
        !close(*summary->decode_tok_s_median, from_samples[arm])) {
      out.push_back({"SPEEDUP_VALUE",
                     fmt::format("arm '{}' ({}): summary decode_tok_s.median is {:g} but its "
                                 "measured samples give {:g}",
                                 arm, why, *summary->decode_tok_s_median, from_samples[arm])});
    }
  }
  for (const Speedup& speedup : run.speedups) {
    if (speedup.metric != kDecodeMetric || !from_samples.count(speedup.subject) ||
        !from_samples.count(speedup.baseline) || from_samples[speedup.baseline] <= 0) {
      continue;
    }
    const double want = from_samples[speedup.subject] / from_samples[speedup.baseline];
    if (!close(speedup.value, want)) {
      out.push_back(
          {"SPEEDUP_VALUE",
           fmt::format("summary.speedups[{}] claims {:g}x for '{}' over '{}' but the "
                       "measured samples give {:g}x",
                       speedup.index, speedup.value, speedup.subject, speedup.baseline, want)});
    }
  }
}

void check_scope(const Run& run, std::vector<Violation>& out) {
  for (const auto& [arm, why] : compared_arms(run)) {
    size_t n_samples = 0;
    std::vector<const Sample*> off_scope;
    std::set<std::string> scopes;
    for (const Sample& sample : run.samples) {
      if (sample.arm != arm) continue;
      ++n_samples;
      scopes.insert(sample.timing_scope);
      if (sample.timing_scope != kDecodeOnly) off_scope.push_back(&sample);
    }
    if (off_scope.empty()) continue;
    out.push_back({"SCOPE_MISMATCH",
                   fmt::format("arm '{}' ({}): {} of {} samples are not timed '{}' (scopes seen: "
                               "{}); first: samples[{}] {} is '{}'",
                               arm, why, off_scope.size(), n_samples, kDecodeOnly,
                               fmt::join(scopes, ", "), off_scope[0]->index,
                               sample_label(*off_scope[0]), off_scope[0]->timing_scope)});
  }
}

void check_prefill_variance(const Run& run, std::vector<Violation>& out) {
  if (run.speedups.empty()) return;  // noise only matters to a claim
  // Every arm, not only the compared ones: prefill noise on any arm says the machine was noisy
  // while the run measured.
  for (const Arm& arm : run.arms) {
    size_t n_over = 0;
    double worst_spread = 0, worst_min = 0, worst_max = 0;
    std::string worst_prompt;
    for (const auto& [prompt, samples] : measured_by_prompt(run, arm.name)) {
      double lo = samples[0]->prefill_s, hi = samples[0]->prefill_s;
      for (const Sample* sample : samples) {
        lo = std::min(lo, sample->prefill_s);
        hi = std::max(hi, sample->prefill_s);
      }
      const double spread =
          hi == 0 ? 1 : (lo == 0 ? std::numeric_limits<double>::infinity() : hi / lo);
      if (spread <= kMaxPrefillSpread) continue;
      ++n_over;
      if (spread > worst_spread) {
        std::tie(worst_spread, worst_min, worst_max, worst_prompt) =
            std::tuple(spread, lo, hi, prompt);
      }
    }
    if (n_over == 0) continue;
    out.push_back({"PREFILL_VARIANCE",
                   fmt::format("arm '{}': prefill_s of prompt '{}' ranges {:g} .. {:g} s over its "
                               "measured samples (spread {:.3g} > {:g}; {} prompt(s) over the "
                               "limit); too noisy for the speed claims in summary.speedups",
                               arm.name, worst_prompt, worst_min, worst_max, worst_spread,
                               kMaxPrefillSpread, n_over)});
  }
}

// First index where two token sequences differ (a length difference counts), or nullopt.
std::optional<size_t> first_mismatch(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const auto [it_a, it_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (it_a == a.end() && it_b == b.end()) return std::nullopt;
  return size_t(it_a - a.begin());
}

std::string token_at(const std::vector<int64_t>& tokens, size_t pos) {
  return pos < tokens.size() ? fmt::format("{}", tokens[pos]) : std::string("end");
}

// Every greedy sample counts, warm-ups too: a warm-up that decodes different tokens is the same
// correctness bug, and greedy AR must agree with itself for it to be a reference at all.
void check_equivalence(const Run& run, std::vector<Violation>& out) {
  std::map<std::string, const Sample*> reference;  // prompt -> first greedy AR sample
  for (const Sample& sample : run.samples) {
    if (sample.greedy && run.arm(sample.arm).kind == "ar") {
      reference.emplace(sample.prompt, &sample);
    }
  }
  struct Finding {
    size_t n_differ = 0;
    size_t n_compared = 0;
    const Sample* first = nullptr;
    size_t at = 0;
  };
  std::map<std::pair<std::string, std::string>, Finding> findings;  // (arm, prompt)
  std::vector<std::pair<std::string, std::string>> finding_order;
  for (const Sample& sample : run.samples) {
    const auto ref = reference.find(sample.prompt);
    if (!sample.greedy || ref == reference.end() || ref->second == &sample) continue;
    const auto key = std::pair(sample.arm, sample.prompt);
    Finding& finding = findings[key];
    ++finding.n_compared;
    const auto at = first_mismatch(sample.tokens, ref->second->tokens);
    if (!at) continue;
    if (finding.n_differ++ == 0) {
      finding.first = &sample;
      finding.at = *at;
      finding_order.push_back(key);
    }
  }
  for (const auto& key : finding_order) {
    const Finding& finding = findings.at(key);
    const Sample& sample = *finding.first;
    const Sample& ref = *reference.at(sample.prompt);
    const bool is_ar = run.arm(sample.arm).kind == "ar";
    out.push_back(
        {"EQUIVALENCE",
         fmt::format("arm '{}' prompt '{}': {} of {} greedy samples differ from {} (arm '{}' {}); "
                     "first: samples[{}] repeat {}{} at token {} ({} vs {}){}",
                     sample.arm, sample.prompt, finding.n_differ, finding.n_compared,
                     is_ar ? "the first greedy AR sample" : "greedy AR", ref.arm, sample_label(ref),
                     sample.index, sample.repeat, sample.warmup ? " (warm-up)" : "", finding.at,
                     token_at(sample.tokens, finding.at), token_at(ref.tokens, finding.at),
                     is_ar ? "; the AR baseline is not deterministic" : "")});
  }
}

// The summary figure must be the maximum over ALL of the arm's samples, warm-ups included: each
// is a getrusage reading taken in this run, and the peak is monotone, so the warm-up cannot be
// above the measured ones unless something else wrote the number.
void check_memory_claim(const Run& run, std::vector<Violation>& out) {
  for (const Arm& arm : run.arms) {
    size_t n_samples = 0;
    std::vector<const Sample*> unmeasured;
    int64_t max_rss = 0;
    for (const Sample& sample : run.samples) {
      if (sample.arm != arm.name) continue;
      ++n_samples;
      if (!sample.peak_rss_bytes || *sample.peak_rss_bytes <= 0) {
        unmeasured.push_back(&sample);
      } else {
        max_rss = std::max(max_rss, *sample.peak_rss_bytes);
      }
    }
    if (!unmeasured.empty()) {
      const Sample& first = *unmeasured[0];
      out.push_back(
          {"MEMORY_CLAIM",
           fmt::format("arm '{}': {} of {} samples have no positive peak_rss_bytes; "
                       "first: samples[{}] {} ({})",
                       arm.name, unmeasured.size(), n_samples, first.index, sample_label(first),
                       first.peak_rss_bytes ? fmt::format("{}", *first.peak_rss_bytes)
                                            : std::string("missing"))});
    }
    const ArmSummary* summary = run.summary(arm.name);
    if (summary == nullptr) continue;  // SCHEMA reports it
    if (!summary->peak_rss_bytes) {
      out.push_back(
          {"MEMORY_CLAIM", fmt::format("summary of arm '{}' has no peak_rss_bytes; its samples' "
                                       "maximum is {}",
                                       arm.name, max_rss)});
    } else if (max_rss == 0) {
      out.push_back(
          {"MEMORY_CLAIM", fmt::format("summary of arm '{}' says peak_rss_bytes {} but none of its "
                                       "samples measured memory",
                                       arm.name, *summary->peak_rss_bytes)});
    } else if (*summary->peak_rss_bytes != max_rss) {
      out.push_back({"MEMORY_CLAIM",
                     fmt::format("summary of arm '{}' says peak_rss_bytes {} but its samples' "
                                 "maximum is {}",
                                 arm.name, *summary->peak_rss_bytes, max_rss)});
    }
  }
}

std::vector<Violation> check_run(const json& report, SchemaReader& schema) {
  Run run;
  read_run_config(report, schema);
  read_arms(report, schema, run);
  read_samples(report, schema, run);
  read_summary(report, schema, run);
  std::vector<Violation> out;
  if (!schema.clean()) return out;
  check_spec_ran(run, out);
  check_baseline_as_subject(run, out);
  check_self_comparison(run, out);
  check_samples(run, out);
  check_decode_tokens(run, out);
  check_decode_only(run, out);
  check_speedup_value(run, out);
  check_scope(run, out);
  check_prefill_variance(run, out);
  check_equivalence(run, out);
  check_memory_claim(run, out);
  return out;
}

// A verify-curve report has no samples behind a speed claim, so only its structure is checked,
// plus memory figures if it carries any: each curve point's peak_rss_bytes must be positive and a
// top-level peak_rss_bytes must be the maximum of the points'.
std::vector<Violation> check_verify_curve(const json& report, SchemaReader& schema) {
  if (const json* config = schema.object(report, "config", "report")) {
    schema.require(*config, "config",
                   {{"max_m", Type::kInt, Bound::kPositive},
                    {"contexts", Type::kIntArray, Bound::kPositive},
                    {"repeats", Type::kInt, Bound::kPositive},
                    {"threads", Type::kInt, Bound::kPositive}});
  }
  std::vector<std::pair<size_t, int64_t>> point_rss;  // curve index, peak_rss_bytes
  if (const json* curve = schema.array(report, "curve", "report")) {
    if (curve->empty()) schema.defect("report: 'curve' is empty, expected at least one point");
    std::set<std::pair<int64_t, int64_t>> seen;  // (ctx, m)
    for (size_t pos = 0; pos < curve->size(); ++pos) {
      const json* point = schema.entry(*curve, pos, "curve");
      if (point == nullptr) continue;
      const auto where = fmt::format("curve[{}]", pos);
      schema.require(*point, where,
                     {{"median_s", Type::kNumber, Bound::kPositive},
                      {"ratio_to_m1", Type::kNumber, Bound::kPositive}});
      for (const char* key : {"min_s", "max_s", "q1_s", "q3_s"}) {
        schema.number(*point, key, where, Bound::kPositive, /*required=*/false);
      }
      const auto ctx = schema.integer(*point, "ctx", where, Bound::kPositive);
      const auto m = schema.integer(*point, "m", where, Bound::kPositive);
      if (ctx && m && !seen.emplace(*ctx, *m).second) {
        schema.defect(fmt::format("{}: a second point for ctx {} m {}", where, *ctx, *m));
      }
      std::optional<int64_t> rss;
      read_peak_rss(*point, where, schema, rss);
      if (rss) point_rss.emplace_back(pos, *rss);
    }
  }
  if (const json* drafters = schema.array(report, "drafters", "report", /*required=*/false)) {
    for (size_t pos = 0; pos < drafters->size(); ++pos) {
      const json* drafter = schema.entry(*drafters, pos, "drafters");
      if (drafter == nullptr) continue;
      const auto where = fmt::format("drafters[{}]", pos);
      schema.require(*drafter, where, {{"name", Type::kString}});
      // A drafter that proposed nothing (the harness writes "proposed": false) has no timing.
      const json* proposed = schema.field(*drafter, "proposed", where, /*required=*/false);
      if (proposed != nullptr && !proposed->is_boolean()) {
        schema.defect(
            fmt::format("{}: 'proposed' is {}, expected a boolean", where, describe(*proposed)));
      } else if (proposed == nullptr || proposed->get<bool>()) {
        schema.require(*drafter, where, {{"per_token_s", Type::kNumber, Bound::kPositive}});
      }
    }
  }
  std::optional<int64_t> report_rss;
  read_peak_rss(report, "report", schema, report_rss);

  std::vector<Violation> out;
  if (!schema.clean()) return out;
  int64_t max_rss = 0;
  for (const auto& [pos, rss] : point_rss) {
    if (rss <= 0) {
      out.push_back({"MEMORY_CLAIM",
                     fmt::format("curve[{}] has peak_rss_bytes {}, expected a measured (positive) "
                                 "figure",
                                 pos, rss)});
    }
    max_rss = std::max(max_rss, rss);
  }
  if (report_rss && *report_rss != max_rss) {
    out.push_back({"MEMORY_CLAIM",
                   max_rss == 0 ? fmt::format("report says peak_rss_bytes {} but no curve point "
                                              "measured memory",
                                              *report_rss)
                                : fmt::format("report says peak_rss_bytes {} but the curve "
                                              "points' maximum is {}",
                                              *report_rss, max_rss)});
  }
  return out;
}

// A non-empty array of finite positive numbers (measured samples); nullopt after a defect.
std::optional<std::vector<double>> positive_samples(const json& parent, std::string_view key,
                                                    std::string_view where, SchemaReader& schema) {
  const json* values = schema.array(parent, key, where);
  if (values == nullptr) return std::nullopt;
  if (values->empty()) {
    schema.defect(fmt::format("{}: '{}' is empty, expected measured samples", where, key));
    return std::nullopt;
  }
  std::vector<double> out;
  for (size_t pos = 0; pos < values->size(); ++pos) {
    const json& value = (*values)[pos];
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0) {
      schema.defect(fmt::format("{}: '{}'[{}] is {}, expected a finite number > 0", where, key, pos,
                                describe(value)));
      return std::nullopt;
    }
    out.push_back(value.get<double>());
  }
  return out;
}

// A roofline point's prefill figures (present when config.prefill_tokens > 0): the medians follow
// from their samples (and prefill_tok_s.median), prefill_gflop_s = prefill_flops /
// prefill_tokens x prefill_tok_s_median / 1e9, prefill_peak_fraction = prefill_gflop_s /
// peak_gflop_s.
void check_roofline_prefill(const json& point, const std::string& where, int64_t prefill_tokens,
                            std::optional<int64_t> prefill_flops, SchemaReader& schema) {
  const auto tok_s = schema.number(point, "prefill_tok_s_median", where, Bound::kPositive);
  const auto gflop_s = schema.number(point, "prefill_gflop_s", where, Bound::kPositive);
  const auto peak = schema.number(point, "peak_gflop_s", where, Bound::kPositive);
  const auto fraction = schema.number(point, "prefill_peak_fraction", where, Bound::kPositive);
  const auto tok_s_samples = positive_samples(point, "samples_prefill_tok_s", where, schema);
  const auto peak_samples = positive_samples(point, "samples_peak_gflop_s", where, schema);
  std::optional<double> summary_median;
  if (const json* summary = schema.object(point, "prefill_tok_s", where)) {
    summary_median = schema.number(*summary, "median", where + ".prefill_tok_s", Bound::kPositive);
  }
  if (tok_s && tok_s_samples && !close(*tok_s, median(*tok_s_samples))) {
    schema.defect(
        fmt::format("{}: prefill_tok_s_median {} is not the median of samples_prefill_tok_s = {}",
                    where, *tok_s, median(*tok_s_samples)));
  }
  if (tok_s && summary_median && !close(*tok_s, *summary_median)) {
    schema.defect(fmt::format("{}: prefill_tok_s_median {} is not prefill_tok_s.median = {}", where,
                              *tok_s, *summary_median));
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
}

// A roofline report makes no comparison between arms, so only its structure is checked, plus the
// arithmetic that ties its figures together: bytes_per_step = weight_bytes + kv_bytes, each point's
// roofline_tok_s = gb_s_median of its (threads, regime) bandwidth x 1e9 / bytes_per_step, and
// fraction = decode_tok_s_median / roofline_tok_s; with prefill on (config.prefill_tokens > 0,
// absent in older reports = off), check_roofline_prefill's identities. All defects are SCHEMA.
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
      const auto lo = schema.number(*entry, "gb_s_min", where, Bound::kPositive);
      const auto hi = schema.number(*entry, "gb_s_max", where, Bound::kPositive);
      if (med && lo && hi && !(*lo <= *med && *med <= *hi)) {
        schema.defect(fmt::format("{}: gb_s min {} median {} max {} are out of order", where, *lo,
                                  *med, *hi));
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
      const auto achieved = schema.number(*point, "decode_tok_s_median", where);
      const auto fraction = schema.number(*point, "fraction", where);
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
      if (!threads || !point_regime || !roofline || !step_bytes || *step_bytes <= 0) continue;
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
    }
  }
  std::optional<int64_t> report_rss;
  read_peak_rss(report, "report", schema, report_rss);
  return {};
}

}  // namespace

std::vector<Violation> check_report(const nlohmann::json& report) {
  if (!report.is_object()) {
    return {{"SCHEMA", fmt::format("the report is {}, expected a JSON object", describe(report))}};
  }
  SchemaReader schema;
  const auto schema_name = schema.string(report, "schema", "report");
  if (schema_name && *schema_name != kSchemaName) {
    schema.defect(fmt::format("report: schema '{}', expected '{}'", *schema_name, kSchemaName));
  }
  const auto kind = schema.string(report, "kind", "report");
  if (kind && *kind != "run" && *kind != "verify-curve" && *kind != "roofline") {
    schema.defect(
        fmt::format("report: kind '{}', expected 'run', 'verify-curve' or 'roofline'", *kind));
  }
  std::vector<Violation> out;
  if (!schema.clean()) {  // an unknown schema or kind: nothing else can be read
    schema.emit(out);
    return out;
  }
  read_header(report, schema);
  auto evidence = *kind == "run"            ? check_run(report, schema)
                  : *kind == "verify-curve" ? check_verify_curve(report, schema)
                                            : check_roofline(report, schema);
  schema.emit(out);
  out.insert(out.end(), evidence.begin(), evidence.end());
  return out;
}

std::string format_violations(const std::vector<Violation>& violations) {
  std::string text;
  for (const Violation& violation : violations) {
    text += fmt::format("{}: {}\n", violation.rule, violation.message);
  }
  return text;
}

}  // namespace augur::bench
