#include "bench/evidence_serve.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "bench/statistics.h"

namespace augur::bench::evidence {

namespace {

using nlohmann::json;

constexpr size_t kMinRepeats = 5;  // distinct measured repeats per (arm, clients) in a claim
constexpr double kMinTokens = 32;  // median completion tokens per request behind a claim
constexpr const char* kMetric = "aggregate_tok_s_median";
constexpr double kWallSlack = 1e-9;  // relative: clocks read on one monotonic timeline

double cell_rate(const ServeSample& s) {  // from the requests, never the sample's own figure
  int64_t tokens = 0;
  for (const ServeRequest& r : s.requests) tokens += r.completion_tokens;
  return static_cast<double>(tokens) / s.wall_s;
}

std::optional<double> cell_median(const ServeReport& serve, const std::string& arm,
                                  int64_t clients) {
  std::vector<double> rates;
  for (const ServeSample* s : serve.cell(arm, clients)) rates.push_back(cell_rate(*s));
  if (rates.empty()) return std::nullopt;
  return median(rates);
}

void read_request(const json& value, const std::string& where, int64_t clients,
                  const ServeReport& serve, SchemaReader& schema, ServeRequest& r) {
  if (const auto v = schema.integer(value, "client", where)) r.client = *v;
  if (const auto v = schema.integer(value, "prompt", where)) r.prompt = *v;
  if (const auto v = schema.number(value, "latency_s", where, Bound::kPositive)) r.latency_s = *v;
  if (const auto v = schema.number(value, "ttft_s", where)) r.ttft_s = *v;
  if (const auto v = schema.integer(value, "completion_tokens", where)) r.completion_tokens = *v;
  if (const auto v = schema.string(value, "text", where)) r.text = *v;
  if (const auto v = schema.string(value, "drafter", where)) r.drafter = *v;
  if (const auto v = schema.integer(value, "cycles", where)) r.cycles = *v;
  if (const auto v = schema.integer(value, "drafted", where)) r.drafted = *v;
  if (const auto v = schema.integer(value, "accepted", where)) r.accepted = *v;
  schema.require(value, where, {{"prefill_s", Type::kNumber}, {"decode_s", Type::kNumber}});
  if (r.client >= clients) {
    schema.defect(fmt::format("{}: client {} in a turn of {} clients", where, r.client, clients));
  }
  if (serve.n_prompts > 0 && r.prompt >= serve.n_prompts) {
    schema.defect(
        fmt::format("{}: prompt {}, but the run has {} prompts", where, r.prompt, serve.n_prompts));
  }
  if (r.ttft_s > r.latency_s) {
    schema.defect(
        fmt::format("{}: ttft_s {} exceeds its latency_s {}", where, r.ttft_s, r.latency_s));
  }
  if (serve.ignore_eos && serve.max_tokens > 0 && r.completion_tokens != serve.max_tokens) {
    schema.defect(
        fmt::format("{}: {} completion tokens, but with ignore_eos every request "
                    "generates max_tokens = {}",
                    where, r.completion_tokens, serve.max_tokens));
  }
}

void read_samples(const json& report, SchemaReader& schema, ServeReport& serve) {
  const json* samples = schema.array(report, "samples", "report");
  if (samples == nullptr) return;
  std::set<std::tuple<std::string, int64_t, int64_t>> seen;
  for (size_t pos = 0; pos < samples->size(); ++pos) {
    const json* value = schema.entry(*samples, pos, "samples");
    if (value == nullptr) continue;
    const auto where = fmt::format("samples[{}]", pos);
    ServeSample s;
    s.index = pos;
    const auto arm = schema.string(*value, "arm", where);
    const auto clients = schema.integer(*value, "clients", where, Bound::kPositive);
    const auto repeat = schema.integer(*value, "repeat", where);
    const auto wall = schema.number(*value, "wall_s", where, Bound::kPositive);
    const auto tokens = schema.integer(*value, "completion_tokens", where);
    const auto rate = schema.number(*value, "aggregate_tok_s", where);
    schema.require(*value, where, {{"order", Type::kInt}});
    if (!arm || !clients || !repeat || !wall || !tokens || !rate) continue;
    s.arm = *arm;
    s.clients = *clients;
    s.repeat = *repeat;
    s.wall_s = *wall;
    s.completion_tokens = *tokens;
    s.aggregate_tok_s = *rate;
    if (serve.arm(s.arm) == nullptr) {
      schema.defect(fmt::format("{}: arm '{}' is not declared in 'arms'", where, s.arm));
    }
    if (std::find(serve.clients.begin(), serve.clients.end(), s.clients) == serve.clients.end()) {
      schema.defect(
          fmt::format("{}: {} clients is not a count of config.clients", where, s.clients));
    }
    if (s.repeat >= serve.repeats) {
      schema.defect(
          fmt::format("{}: repeat {}, but config.repeats is {}", where, s.repeat, serve.repeats));
    }
    if (!seen.emplace(s.arm, s.clients, s.repeat).second) {
      schema.defect(fmt::format("{}: a second sample of arm '{}', {} clients, repeat {}", where,
                                s.arm, s.clients, s.repeat));
    }
    if (const json* requests = schema.array(*value, "requests", where)) {
      std::map<int64_t, int64_t> per_client;
      for (size_t at = 0; at < requests->size(); ++at) {
        const json* request = schema.entry(*requests, at, where + ".requests");
        if (request == nullptr) continue;
        ServeRequest r;
        read_request(*request, fmt::format("{}.requests[{}]", where, at), s.clients, serve, schema,
                     r);
        ++per_client[r.client];
        s.requests.push_back(std::move(r));
      }
      const bool every_client_full =
          static_cast<int64_t>(per_client.size()) == s.clients &&
          std::all_of(per_client.begin(), per_client.end(),
                      [&](const auto& entry) { return entry.second == serve.requests_per_client; });
      if (!every_client_full) {
        schema.defect(fmt::format(
            "{}: {} requests from {} clients, but each of its {} clients "
            "sends config.requests_per_client = {}",
            where, s.requests.size(), per_client.size(), s.clients, serve.requests_per_client));
      }
    }
    serve.samples.push_back(std::move(s));
  }
  // Every arm measured at every client count in every repeat: a report without some turns
  // (a subset picked after the fact) contradicts its configuration.
  for (const ServeArm& arm : serve.arms) {
    for (int64_t clients : serve.clients) {
      for (int64_t repeat = 0; repeat < serve.repeats; ++repeat) {
        if (seen.count({arm.name, clients, repeat}) == 0) {
          schema.defect(fmt::format("samples: no sample of arm '{}', {} clients, repeat {}",
                                    arm.name, clients, repeat));
        }
      }
    }
  }
}

void read_claims(const json& summary, SchemaReader& schema, ServeReport& serve) {
  const json* speedups = schema.array(summary, "speedups", "summary");
  schema.array(summary, "withheld", "summary");
  if (speedups == nullptr) return;
  std::set<std::pair<int64_t, std::string>> seen;
  for (size_t pos = 0; pos < speedups->size(); ++pos) {
    const json* value = schema.entry(*speedups, pos, "summary.speedups");
    if (value == nullptr) continue;
    const auto where = fmt::format("summary.speedups[{}]", pos);
    const auto clients = schema.integer(*value, "clients", where, Bound::kPositive);
    const auto subject = schema.string(*value, "subject", where);
    const auto baseline = schema.string(*value, "baseline", where);
    const auto metric = schema.string(*value, "metric", where);
    const auto claimed = schema.number(*value, "value", where, Bound::kAny);
    if (!clients || !subject || !baseline || !metric || !claimed) continue;
    for (const auto& name : {*subject, *baseline}) {
      if (serve.arm(name) == nullptr) {
        schema.defect(fmt::format("{}: arm '{}' is not declared in 'arms'", where, name));
      }
    }
    if (std::find(serve.clients.begin(), serve.clients.end(), *clients) == serve.clients.end()) {
      schema.defect(fmt::format("{}: {} clients were not measured", where, *clients));
    }
    if (!seen.emplace(*clients, *subject).second) {
      schema.defect(
          fmt::format("{}: a second claim for '{}' at {} clients", where, *subject, *clients));
    }
    serve.claims.push_back({pos, *clients, *subject, *baseline, *metric, *claimed});
  }
}

// Requests (all arms) whose text or token count differ from the first AR request of their prompt.
struct TextMismatch {
  const ServeSample* sample;
  const ServeRequest* request;
  const ServeSample* reference_sample;
};

std::vector<TextMismatch> text_mismatches(const ServeReport& serve) {
  const ServeArm* ar = serve.ar_arm();
  if (ar == nullptr) return {};
  std::map<int64_t, std::pair<const ServeSample*, const ServeRequest*>> reference;
  for (const ServeSample& s : serve.samples) {
    if (s.arm != ar->name) continue;
    for (const ServeRequest& r : s.requests) reference.emplace(r.prompt, std::pair{&s, &r});
  }
  std::vector<TextMismatch> out;
  for (const ServeSample& s : serve.samples) {
    for (const ServeRequest& r : s.requests) {
      const auto it = reference.find(r.prompt);
      if (it == reference.end()) continue;  // a prompt AR never ran: nothing to compare with
      const ServeRequest& ref = *it->second.second;
      if (r.text != ref.text || r.completion_tokens != ref.completion_tokens) {
        out.push_back({&s, &r, it->second.first});
      }
    }
  }
  return out;
}

std::string first_difference(const std::string& a, const std::string& b) {
  size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  return fmt::format("first differing byte {}", at);
}

void check_equivalence(const ServeReport& serve, std::vector<Violation>& out) {
  if (serve.ar_arm() == nullptr) {
    out.push_back({"EQUIVALENCE",
                   "no ar arm: the greedy texts have nothing to be checked "
                   "against"});
    return;
  }
  std::map<std::string, std::vector<const TextMismatch*>> by_arm;
  const auto mismatches = text_mismatches(serve);
  for (const TextMismatch& m : mismatches) by_arm[m.sample->arm].push_back(&m);
  for (const auto& [arm, list] : by_arm) {
    std::set<int64_t> prompts;
    for (const TextMismatch* m : list) prompts.insert(m->request->prompt);
    const TextMismatch& first = *list.front();
    out.push_back({"EQUIVALENCE",
                   fmt::format(
                       "arm '{}': {} greedy request(s) over {} prompt(s) differ from the ar arm's "
                       "text of the same prompt; first: {} prompt {} ({} tokens vs {}; {}) against "
                       "{}",
                       arm, list.size(), prompts.size(), first.sample->label(),
                       first.request->prompt, first.request->completion_tokens,
                       [&] {
                         for (const ServeRequest& r : first.reference_sample->requests) {
                           if (r.prompt == first.request->prompt) return r.completion_tokens;
                         }
                         return int64_t{0};
                       }(),
                       [&] {
                         for (const ServeRequest& r : first.reference_sample->requests) {
                           if (r.prompt == first.request->prompt) {
                             return first_difference(first.request->text, r.text);
                           }
                         }
                         return std::string();
                       }(),
                       first.reference_sample->label())});
  }
}

// A spec arm that never drafted measured plain decoding; a request that reports no drafter ran
// none, whatever its counts say.
void check_spec_ran(const ServeReport& serve, std::vector<Violation>& out) {
  for (const ServeArm& arm : serve.arms) {
    if (arm.kind != "spec") continue;
    int64_t drafted = 0, cycles = 0;
    size_t n_requests = 0;
    const ServeSample* none_sample = nullptr;
    size_t n_none = 0;
    for (const ServeSample& s : serve.samples) {
      if (s.arm != arm.name) continue;
      for (const ServeRequest& r : s.requests) {
        ++n_requests;
        drafted += r.drafted;
        cycles += r.cycles;
        if (r.drafter == "none" || r.drafter.empty()) {
          if (n_none++ == 0) none_sample = &s;
        }
      }
    }
    if (n_requests == 0 || drafted == 0 || cycles == 0) {
      out.push_back(
          {"SPEC_NEVER_RAN", fmt::format("spec arm '{}': its {} requests ran {} cycles drafting {} "
                                         "tokens; it measured plain decoding",
                                         arm.name, n_requests, cycles, drafted)});
    } else if (n_none > 0) {
      out.push_back({"SPEC_NEVER_RAN",
                     fmt::format("spec arm '{}': {} of its requests report drafter 'none' (no "
                                 "drafter ran, whatever their counts say); first in {}",
                                 arm.name, n_none, none_sample->label())});
    }
  }
}

// A request's own counts: an ar request drafts nothing; accepted <= drafted; every cycle
// commits at least one token. A turn's completion_tokens and aggregate_tok_s follow from it.
std::string sample_arithmetic(const ServeReport& serve, const ServeSample& s) {
  const ServeArm* arm = serve.arm(s.arm);
  int64_t tokens = 0;
  for (size_t at = 0; at < s.requests.size(); ++at) {
    const ServeRequest& r = s.requests[at];
    tokens += r.completion_tokens;
    if (arm->kind == "ar" &&
        (r.cycles != 0 || r.drafted != 0 || r.accepted != 0 || r.drafter != "none")) {
      return fmt::format(
          "requests[{}] of an ar arm reports drafter '{}' with {} cycles, {} "
          "drafted",
          at, r.drafter, r.cycles, r.drafted);
    }
    if (r.accepted > r.drafted || r.cycles > r.completion_tokens) {
      return fmt::format("requests[{}]: {} accepted of {} drafted in {} cycles for {} tokens", at,
                         r.accepted, r.drafted, r.cycles, r.completion_tokens);
    }
  }
  if (tokens != s.completion_tokens) {
    return fmt::format("completion_tokens is {} but its requests generated {}", s.completion_tokens,
                       tokens);
  }
  if (!close(s.aggregate_tok_s, static_cast<double>(tokens) / s.wall_s)) {
    return fmt::format("aggregate_tok_s is {} but completion_tokens / wall_s is {}",
                       s.aggregate_tok_s, static_cast<double>(tokens) / s.wall_s);
  }
  return "";
}

void check_derived_values(const ServeReport& serve, std::vector<Violation>& out) {
  for (const ServeArm& arm : serve.arms) {
    size_t n_wrong = 0;
    std::string first;
    for (const ServeSample& s : serve.samples) {
      if (s.arm != arm.name) continue;
      const std::string wrong = sample_arithmetic(serve, s);
      if (!wrong.empty() && n_wrong++ == 0) first = fmt::format("{}: {}", s.label(), wrong);
    }
    if (n_wrong > 0) {
      out.push_back({"DERIVED_VALUE", fmt::format("arm '{}': {} samples whose figures do not "
                                                  "follow from their requests; first: {}",
                                                  arm.name, n_wrong, first)});
    }
  }
  if (serve.summary_cells == nullptr) return;
  std::map<std::pair<std::string, int64_t>, const json*> reported;
  for (const json& cell : *serve.summary_cells) {
    if (cell.is_object() && cell.contains("arm") && cell["arm"].is_string() &&
        cell.contains("clients") && cell["clients"].is_number_integer()) {
      reported[{cell["arm"].get<std::string>(), cell["clients"].get<int64_t>()}] = &cell;
    }
  }
  for (const ServeArm& arm : serve.arms) {
    for (int64_t clients : serve.clients) {
      const auto it = reported.find({arm.name, clients});
      if (it == reported.end()) {
        out.push_back({"DERIVED_VALUE", fmt::format("summary.cells has no cell for arm '{}' at "
                                                    "{} clients",
                                                    arm.name, clients)});
        continue;
      }
      const json derived = derive_serve_cell(serve, arm.name, clients);
      if (const auto diff = summary_difference(derived, *it->second, ""); !diff.empty()) {
        out.push_back({"DERIVED_VALUE", fmt::format("summary cell of arm '{}' at {} clients: {}",
                                                    arm.name, clients, diff)});
      }
    }
  }
}

// A client sends its requests back to back inside the turn: their latencies cannot add up to
// more than the turn's wall time. A shrunk wall_s (with aggregate_tok_s recomputed to match)
// shows here.
void check_wall_clock(const ServeReport& serve, std::vector<Violation>& out) {
  std::map<std::string, std::pair<size_t, std::string>> by_arm;  // count, first
  for (const ServeSample& s : serve.samples) {
    std::map<int64_t, double> busy_s;
    for (const ServeRequest& r : s.requests) busy_s[r.client] += r.latency_s;
    for (const auto& [client, busy] : busy_s) {
      if (busy > s.wall_s * (1 + kWallSlack)) {
        auto& [count, first] = by_arm[s.arm];
        if (count++ == 0) {
          first = fmt::format("{}: client {} spent {:.6g} s in its requests, wall_s is {:.6g}",
                              s.label(), client, busy, s.wall_s);
        }
        break;
      }
    }
  }
  for (const auto& [arm, entry] : by_arm) {
    out.push_back({"WALL_CLOCK", fmt::format("arm '{}': {} samples shorter than their clients' "
                                             "back-to-back requests; first: {}",
                                             arm, entry.first, entry.second)});
  }
}

void check_memory(const json& report, SchemaReader& schema, std::vector<Violation>& out) {
  if (schema.field(report, "peak_rss_bytes", "report", false) == nullptr) {
    out.push_back({"MEMORY_CLAIM",
                   "the report has no peak_rss_bytes: its memory was not "
                   "measured"});
    return;
  }
  const auto rss = schema.integer(report, "peak_rss_bytes", "report", Bound::kAny);
  if (rss && *rss <= 0) {
    out.push_back({"MEMORY_CLAIM", fmt::format("the report's peak_rss_bytes is {}, expected a "
                                               "measured (positive) figure",
                                               *rss)});
  }
}

}  // namespace

std::string ServeSample::label() const {
  return fmt::format("samples[{}] (arm '{}', {} clients, repeat {})", index, arm, clients, repeat);
}

const ServeArm* ServeReport::arm(const std::string& name) const {
  for (const ServeArm& a : arms) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const ServeArm* ServeReport::ar_arm() const {
  for (const ServeArm& a : arms) {
    if (a.kind == "ar") return &a;
  }
  return nullptr;
}

std::vector<const ServeSample*> ServeReport::cell(const std::string& arm, int64_t clients) const {
  std::vector<const ServeSample*> out;
  for (const ServeSample& s : samples) {
    if (s.arm == arm && s.clients == clients) out.push_back(&s);
  }
  return out;
}

ServeReport read_serve(const json& report, SchemaReader& schema, bool with_summary) {
  ServeReport serve;
  if (const json* config = schema.object(report, "config", "report")) {
    if (const auto v = schema.integers(*config, "clients", "config", Bound::kPositive)) {
      serve.clients = *v;
      if (serve.clients.empty()) schema.defect("config: 'clients' is empty");
      if (std::set<int64_t>(v->begin(), v->end()).size() != v->size()) {
        schema.defect("config: a client count is listed twice in 'clients'");
      }
    }
    if (const auto v = schema.integer(*config, "repeats", "config", Bound::kPositive)) {
      serve.repeats = *v;
    }
    if (const auto v = schema.integer(*config, "requests_per_client", "config", Bound::kPositive)) {
      serve.requests_per_client = *v;
    }
    if (const auto v = schema.integer(*config, "max_tokens", "config", Bound::kPositive)) {
      serve.max_tokens = *v;
    }
    if (const auto v = schema.integer(*config, "n_prompts", "config", Bound::kPositive)) {
      serve.n_prompts = *v;
    }
    if (const auto v = schema.boolean(*config, "ignore_eos", "config")) serve.ignore_eos = *v;
    schema.require(*config, "config",
                   {{"parallel", Type::kInt, Bound::kPositive},
                    {"threads", Type::kInt, Bound::kPositive},
                    {"prompts_sha256", Type::kString}});
    if (const auto t = schema.number(*config, "temperature", "config", Bound::kAny); t && *t > 0) {
      schema.defect(
          fmt::format("config: temperature {}; a serve report is greedy (0) so that "
                      "its arms' texts can be compared",
                      *t));
    }
    if (const auto scope = schema.string(*config, "timing_scope", "config");
        scope && *scope != "end_to_end") {
      schema.defect(fmt::format("config: timing_scope '{}', expected 'end_to_end'", *scope));
    }
    if (const auto file = schema.string(*config, "prompts_file", "config");
        file && file->starts_with("/")) {
      schema.defect(fmt::format(
          "config: prompts_file '{}' is absolute; name it relative to the repository", *file));
    }
  }
  if (const json* arms = schema.array(report, "arms", "report")) {
    for (size_t pos = 0; pos < arms->size(); ++pos) {
      const json* value = schema.entry(*arms, pos, "arms");
      if (value == nullptr) continue;
      const auto where = fmt::format("arms[{}]", pos);
      const auto name = schema.string(*value, "name", where);
      const auto kind = schema.string(*value, "kind", where);
      const auto drafter = schema.string(*value, "drafter", where);
      if (!name || !kind || !drafter) continue;
      if (*kind != "ar" && *kind != "spec") {
        schema.defect(fmt::format("{}: kind '{}', expected 'ar' or 'spec'", where, *kind));
      }
      if (*kind == "ar" && *drafter != "none") {
        schema.defect(fmt::format("{}: an ar arm with drafter '{}'", where, *drafter));
      }
      if (serve.arm(*name) != nullptr) {
        schema.defect(fmt::format("{}: a second arm named '{}'", where, *name));
      }
      serve.arms.push_back({*name, *kind, *drafter});
    }
  }
  if (!schema.clean()) return serve;  // samples cannot be read against a broken config
  read_samples(report, schema, serve);
  if (with_summary) {
    if (const json* summary = schema.object(report, "summary", "report")) {
      serve.summary_cells = schema.array(*summary, "cells", "summary");
      read_claims(*summary, schema, serve);
    }
  }
  return serve;
}

json derive_serve_cell(const ServeReport& serve, const std::string& arm, int64_t clients) {
  std::vector<double> rates, latency, ttft, tokens;
  int64_t completion_tokens = 0, cycles = 0, drafted = 0, accepted = 0;
  const auto samples = serve.cell(arm, clients);
  for (const ServeSample* s : samples) {
    rates.push_back(cell_rate(*s));
    for (const ServeRequest& r : s->requests) {
      latency.push_back(r.latency_s);
      ttft.push_back(r.ttft_s);
      tokens.push_back(static_cast<double>(r.completion_tokens));
      completion_tokens += r.completion_tokens;
      cycles += r.cycles;
      drafted += r.drafted;
      accepted += r.accepted;
    }
  }
  const auto percentiles = [](const std::vector<double>& values) {
    if (values.empty()) return json::object();
    return json{{"p50", quantile(values, 0.5)},
                {"p95", quantile(values, 0.95)},
                {"max", *std::max_element(values.begin(), values.end())}};
  };
  return {{"arm", arm},
          {"clients", clients},
          {"n_repeats", samples.size()},
          {"n_requests", latency.size()},
          {"completion_tokens", completion_tokens},
          {"aggregate_tok_s", spread(rates)},
          {"latency_s", percentiles(latency)},
          {"ttft_s", percentiles(ttft)},
          {"cycles", cycles},
          {"drafted", drafted},
          {"accepted", accepted},
          {"tau", cycles > 0 ? static_cast<double>(accepted + cycles) / cycles : 0.0}};
}

std::vector<Violation> serve_claim_violations(const ServeReport& serve, const ServeClaim& claim) {
  std::vector<Violation> out;
  const ServeArm* subject = serve.arm(claim.subject);
  const ServeArm* baseline = serve.arm(claim.baseline);
  const auto where = fmt::format("the claim for '{}' over '{}' at {} clients", claim.subject,
                                 claim.baseline, claim.clients);
  if (subject == nullptr || baseline == nullptr) {
    out.push_back({"SCHEMA", fmt::format("{} names an undeclared arm", where)});
    return out;
  }
  if (subject->kind != "spec" || baseline->kind != "ar") {
    out.push_back({"BASELINE_AS_SUBJECT",
                   fmt::format("{}: a claim is a spec arm over the ar arm, not {} over {}", where,
                               subject->kind, baseline->kind)});
  }
  int64_t drafted = 0, cycles = 0;
  for (const ServeSample* s : serve.cell(claim.subject, claim.clients)) {
    for (const ServeRequest& r : s->requests) {
      drafted += r.drafted;
      cycles += r.cycles;
    }
  }
  if (subject->kind == "spec" && (drafted == 0 || cycles == 0)) {
    out.push_back({"SPEC_NEVER_RAN", fmt::format("{}: the spec arm drafted {} tokens in {} "
                                                 "cycles at this client count",
                                                 where, drafted, cycles)});
  }
  // The same path: the same arm, the same declared drafter, or copied wall times.
  std::string same;
  if (claim.subject == claim.baseline) {
    same = "the same arm";
  } else if (subject->drafter == baseline->drafter) {
    same = fmt::format("the same drafter '{}'", subject->drafter);
  } else {
    std::vector<double> ratios;
    for (const ServeSample* a : serve.cell(claim.subject, claim.clients)) {
      for (const ServeSample* b : serve.cell(claim.baseline, claim.clients)) {
        if (a->repeat != b->repeat) continue;
        if (same_measurement(a->wall_s, b->wall_s)) {
          same = fmt::format("copied timings: {} and {} have the same wall_s {:g}", a->label(),
                             b->label(), a->wall_s);
        }
        ratios.push_back(a->wall_s / b->wall_s);
      }
    }
    if (same.empty() && ratios.size() >= 2 &&
        same_measurement(*std::min_element(ratios.begin(), ratios.end()),
                         *std::max_element(ratios.begin(), ratios.end()))) {
      same = fmt::format("rescaled copies: every repeat's wall_s is {:.9g} x the other's",
                         ratios.front());
    }
  }
  if (!same.empty()) {
    out.push_back({"SELF_COMPARISON", fmt::format("{} compares {}", where, same)});
  }
  for (const std::string& arm : {claim.subject, claim.baseline}) {
    std::vector<double> distinct, tokens;
    for (const ServeSample* s : serve.cell(arm, claim.clients)) {
      if (std::none_of(distinct.begin(), distinct.end(),
                       [&](double d) { return same_measurement(d, s->wall_s); })) {
        distinct.push_back(s->wall_s);
      }
      for (const ServeRequest& r : s->requests) {
        tokens.push_back(static_cast<double>(r.completion_tokens));
      }
    }
    if (distinct.size() < kMinRepeats) {
      out.push_back({"SAMPLES", fmt::format("{}: arm '{}' has {} distinct measured repeats, a "
                                            "claim needs {}",
                                            where, arm, distinct.size(), kMinRepeats)});
    }
    if (!tokens.empty() && median(tokens) < kMinTokens) {
      out.push_back({"DECODE_TOKENS", fmt::format("{}: arm '{}' generates a median of {:g} "
                                                  "tokens per request; a claim needs {:g}",
                                                  where, arm, median(tokens), kMinTokens)});
    }
  }
  const auto s_median = cell_median(serve, claim.subject, claim.clients);
  const auto b_median = cell_median(serve, claim.baseline, claim.clients);
  if (claim.metric != kMetric) {
    out.push_back({"SPEEDUP_VALUE", fmt::format("{} uses metric '{}'; only '{}' is a claim", where,
                                                claim.metric, kMetric)});
  } else if (!s_median || !b_median || *b_median <= 0) {
    out.push_back({"SAMPLES", fmt::format("{}: no measured throughput to compare", where)});
  } else if (!close(claim.value, *s_median / *b_median)) {
    out.push_back({"SPEEDUP_VALUE", fmt::format("{} is {:g}x but the samples give {:g}x", where,
                                                claim.value, *s_median / *b_median)});
  }
  return out;
}

json summarize_serve(const ServeReport& serve) {
  json summary = {{"timing_scope", "end_to_end"},
                  {"cells", json::array()},
                  {"speedups", json::array()},
                  {"withheld", json::array()}};
  for (const ServeArm& arm : serve.arms) {
    for (int64_t clients : serve.clients) {
      summary["cells"].push_back(derive_serve_cell(serve, arm.name, clients));
    }
  }
  std::set<std::string> unequal;  // arms with a text that differs from AR's
  for (const TextMismatch& m : text_mismatches(serve)) unequal.insert(m.sample->arm);
  const ServeArm* ar = serve.ar_arm();
  for (const ServeArm& arm : serve.arms) {
    if (arm.kind != "spec") continue;
    for (int64_t clients : serve.clients) {
      if (ar == nullptr) {
        summary["withheld"].push_back({{"arm", arm.name},
                                       {"clients", clients},
                                       {"rule", "BASELINE"},
                                       {"reason", "no ar arm to compare with"}});
        continue;
      }
      const auto s = cell_median(serve, arm.name, clients);
      const auto b = cell_median(serve, ar->name, clients);
      ServeClaim claim{0, clients, arm.name, ar->name, kMetric, s && b && *b > 0 ? *s / *b : 0};
      auto violations = serve_claim_violations(serve, claim);
      if (unequal.count(arm.name) != 0) {
        violations.push_back({"EQUIVALENCE", "a greedy text differs from the ar arm's"});
      }
      if (violations.empty()) {
        summary["speedups"].push_back({{"clients", clients},
                                       {"subject", claim.subject},
                                       {"baseline", claim.baseline},
                                       {"metric", claim.metric},
                                       {"value", claim.value}});
      }
      for (const Violation& v : violations) {
        summary["withheld"].push_back(
            {{"arm", arm.name}, {"clients", clients}, {"rule", v.rule}, {"reason", v.message}});
      }
    }
  }
  return summary;
}

std::vector<Violation> check_serve(const json& report, SchemaReader& schema) {
  const ServeReport serve = read_serve(report, schema, /*with_summary=*/true);
  if (!schema.clean()) return {};
  std::vector<Violation> out;
  check_spec_ran(serve, out);
  const bool arm_never_ran = !out.empty();  // only SPEC_NEVER_RAN lines so far
  for (const ServeClaim& claim : serve.claims) {
    for (Violation& v : serve_claim_violations(serve, claim)) {
      if (v.rule == "SPEC_NEVER_RAN" && arm_never_ran) continue;  // the arm-wide line says it
      v.message = fmt::format("summary.speedups[{}]: {}", claim.index, v.message);
      out.push_back(std::move(v));
    }
  }
  check_equivalence(serve, out);
  check_derived_values(serve, out);
  check_wall_clock(serve, out);
  check_memory(report, schema, out);
  // Rules in the doc's table order.
  static const std::vector<std::string> kOrder = {
      "SPEC_NEVER_RAN", "BASELINE_AS_SUBJECT", "SELF_COMPARISON", "SAMPLES",    "DECODE_TOKENS",
      "SPEEDUP_VALUE",  "EQUIVALENCE",         "DERIVED_VALUE",   "WALL_CLOCK", "MEMORY_CLAIM"};
  std::stable_sort(out.begin(), out.end(), [&](const Violation& a, const Violation& b) {
    const auto rank = [&](const std::string& rule) {
      return std::find(kOrder.begin(), kOrder.end(), rule) - kOrder.begin();
    };
    return rank(a.rule) < rank(b.rule);
  });
  return out;
}

}  // namespace augur::bench::evidence
