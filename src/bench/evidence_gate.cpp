#include "bench/evidence_gate.h"

#include <fmt/format.h>

#include "bench/evidence_measurements.h"
#include "bench/evidence_niah.h"
#include "bench/evidence_run.h"
#include "bench/evidence_serve.h"
#include "bench/run_report.h"
#include "common/error.h"

namespace augur::bench {

namespace {

using evidence::describe;
using evidence::SchemaReader;
using nlohmann::json;

constexpr std::string_view kSchemaName = "augur.bench/1";

void read_header(const json& report, SchemaReader& schema) {
  using evidence::Bound;
  using evidence::Type;
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
    size_t n_targets = 0;
    for (size_t pos = 0; pos < models->size(); ++pos) {
      if (const json* model = schema.entry(*models, pos, "models")) {
        const auto where = fmt::format("models[{}]", pos);
        schema.require(*model, where,
                       {{"sha256", Type::kString},
                        {"bytes", Type::kInt, Bound::kPositive},
                        {"arch", Type::kString},
                        {"tensor_types", Type::kObject}});
        const auto role = schema.string(*model, "role", where);
        if (role && *role != "target" && *role != "draft" && *role != "head") {
          schema.defect(
              fmt::format("{}: role '{}', expected 'target', 'draft' or 'head'", where, *role));
        }
        n_targets += role == "target" ? 1 : 0;
        if (const json* types = schema.object(*model, "tensor_types", where)) {
          for (const auto& [type, count] : types->items()) {
            if (!count.is_number_integer() || count.get<int64_t>() < 1) {
              schema.defect(fmt::format("{}: tensor_types.{} is {}, expected a count > 0", where,
                                        type, describe(count)));
            }
          }
        }
        // Reports name files relative to the repository, never by a machine's absolute path.
        if (const auto path = schema.string(*model, "path", where);
            path && path->starts_with("/")) {
          schema.defect(
              fmt::format("{}: path '{}' is absolute; name the file relative to the "
                          "repository (or by name and sha256)",
                          where, *path));
        }
      }
    }
    if (n_targets != 1) {
      schema.defect(fmt::format("models: {} entries with role 'target', expected one", n_targets));
    }
  }
}

}  // namespace

std::vector<Violation> check_report(const json& report) {
  if (!report.is_object()) {
    return {{"SCHEMA", fmt::format("the report is {}, expected a JSON object", describe(report))}};
  }
  SchemaReader schema;
  const auto schema_name = schema.string(report, "schema", "report");
  if (schema_name && *schema_name != kSchemaName) {
    schema.defect(fmt::format("report: schema '{}', expected '{}'", *schema_name, kSchemaName));
  }
  const auto kind = schema.string(report, "kind", "report");
  if (kind && *kind != "run" && *kind != "verify-curve" && *kind != "roofline" &&
      *kind != "serve" && *kind != "niah") {
    schema.defect(fmt::format(
        "report: kind '{}', expected 'run', 'verify-curve', 'roofline', 'serve' or 'niah'", *kind));
  }
  std::vector<Violation> out;
  if (!schema.clean()) {  // an unknown schema or kind: nothing else can be read
    schema.emit(out);
    return out;
  }
  read_header(report, schema);
  std::vector<Violation> evidence;
  if (*kind == "run") {
    if (report.contains("config") && report["config"].is_object()) {
      if (const auto file = schema.string(report["config"], "prompts_file", "config");
          file && file->starts_with("/")) {
        schema.defect(
            fmt::format("config: prompts_file '{}' is absolute; name it relative to the "
                        "repository",
                        *file));
      }
    }
    const auto run = evidence::read_run(report, schema);
    if (schema.clean()) evidence = evidence::check_run_evidence(run);
  } else if (*kind == "serve") {
    evidence = evidence::check_serve(report, schema);
  } else if (*kind == "niah") {
    evidence = evidence::check_niah(report, schema);
  } else if (*kind == "verify-curve") {
    evidence = evidence::check_verify_curve(report, schema);
  } else {
    evidence = evidence::check_roofline(report, schema);
  }
  schema.emit(out);
  if (out.empty()) out.insert(out.end(), evidence.begin(), evidence.end());
  return out;
}

json summarize_run(const json& report) {
  SchemaReader schema;
  const auto run = evidence::read_run(report, schema, /*with_summary=*/false);
  if (!schema.clean()) {
    std::vector<Violation> defects;
    schema.emit(defects);
    throw InvalidArgument("cannot summarize a malformed run report: " + format_violations(defects));
  }
  json summary = {{"arms", json::array()},
                  {"speedups", json::array()},
                  {"withheld", json::array()},
                  {"equivalence", json::array()}};
  const evidence::Arm* ar = nullptr;
  for (const evidence::Arm& arm : run.arms) {
    summary["arms"].push_back(evidence::derive_arm_summary(run, arm.name));
    if (ar == nullptr && arm.config.kind == "ar") ar = &arm;
  }
  for (const evidence::Mismatch& m : evidence::equivalence_mismatches(run)) {
    summary["equivalence"].push_back({{"arm", m.sample->arm},
                                      {"prompt", m.sample->prompt},
                                      {"repeat", m.sample->repeat},
                                      {"first_mismatch", m.at}});
  }
  for (const evidence::Arm& arm : run.arms) {
    if (arm.config.kind != "spec") continue;
    if (ar == nullptr) {
      summary["withheld"].push_back(
          {{"arm", arm.name}, {"rule", "BASELINE"}, {"reason", "no ar arm to compare with"}});
      continue;
    }
    const auto subject = evidence::measured_decode_median(run, arm.name);
    const auto baseline = evidence::measured_decode_median(run, ar->name);
    const double value = subject && baseline && *baseline > 0 ? *subject / *baseline : 0;
    const evidence::Speedup claim{summary["speedups"].size(), arm.name, ar->name,
                                  "decode_tok_s_median", value};
    auto violations = evidence::claim_violations(run, claim);
    if (value <= 0 && violations.empty()) {
      violations.push_back({"SAMPLES", "no measured decode speed to compare"});
    }
    if (violations.empty()) {
      summary["speedups"].push_back({{"subject", claim.subject},
                                     {"baseline", claim.baseline},
                                     {"metric", claim.metric},
                                     {"value", claim.value}});
    }
    for (const Violation& v : violations) {
      summary["withheld"].push_back({{"arm", arm.name}, {"rule", v.rule}, {"reason", v.message}});
    }
  }
  return summary;
}

json summarize_serve(const json& report) {
  SchemaReader schema;
  const auto serve = evidence::read_serve(report, schema, /*with_summary=*/false);
  if (!schema.clean()) {
    std::vector<Violation> defects;
    schema.emit(defects);
    throw InvalidArgument("cannot summarize a malformed serve report: " +
                          format_violations(defects));
  }
  return evidence::summarize_serve(serve);
}

std::string format_violations(const std::vector<Violation>& violations) {
  std::string text;
  for (const Violation& violation : violations) {
    text += fmt::format("{}: {}\n", violation.rule, violation.message);
  }
  return text;
}

}  // namespace augur::bench
