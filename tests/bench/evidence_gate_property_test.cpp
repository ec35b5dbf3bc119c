// Property: one field of a valid run report changed at a time (every number of a sample of each
// arm, measured and warm-up, every flag and key, every arm, config and summary field). A change
// the gate lets through must leave every conclusion as it was — the summary re-derived from the
// changed report (figures, claims, findings) equals the valid one — unless the field is one of
// those listed below that no conclusion is drawn from, and even then the claims stand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/evidence_gate.h"
#include "support/bench_reports.h"
#include "support/gate_assertions.h"

namespace augur::bench {
namespace {

using nlohmann::json;

// Fields whose value no rule can tie to the data, with why a change to them is harmless.
const std::map<std::string, std::string>& neutral_fields() {
  static const std::map<std::string, std::string> fields = {
      {"created", "a timestamp"},
      {"machine", "describes the machine; the gate cannot measure it"},
      {"build", "describes the build"},
      {"models/path", "names a file; the sha256 identifies it"},
      {"models/sha256", "identifies a file the gate cannot read"},
      {"models/arch", "describes a file"},
      {"models/tensor_types", "describes a file"},
      {"models/role", "a draft model only tightens the memory bound of model arms"},
      {"models/bytes", "only bounds arm_bytes from below"},
      {"config/prompts_file", "names a file"},
      {"config/prompts_sha256", "identifies a file"},
      {"config/threads", "describes the run"},
      {"config/ubatch", "describes the run"},
      {"config/n_ctx", "describes the run"},
      {"config/seed", "sampled runs are judged by law, not by seed"},
      {"config/peak_rss_scope", "documents how peak_rss_bytes was measured"},
      {"config/ignore_eos", "false only loosens the committed-token identity"},
      {"config/sampler/top_k", "a greedy run ignores it (top-k 1 would be greedy too)"},
      {"config/sampler/top_p", "a greedy run ignores it"},
      {"config/sampler/min_p", "a greedy run ignores it"},
      {"config/sampler/repeat_penalty", "changes the text, which equivalence checks, not a claim"},
      {"arms/config_key", "a label: identity comes from configuration and data"},
      {"arms/drafter", "names the drafter; only the memory bound of model arms reads it"},
      {"arms/ngram_max", "an n-gram detail no data shows"},
      {"arms/role", "a spec arm's role is a label (an ar subject is still caught)"},
      {"samples/draft_s", "diagnostic; only bounded by decode_s"},
      {"samples/verify_s", "diagnostic; only bounded by decode_s"},
      {"summary/withheld", "the harness's reasons; the gate re-derives every rule"},
      {"summary/equivalence", "the harness's findings; the gate re-derives them"},
  };
  return fields;
}

// "samples/3/decode_s" -> "samples/decode_s"; "config/sampler/top_k" stays.
std::string field_class(const std::string& pointer) {
  std::string out;
  size_t start = 1;
  while (start <= pointer.size()) {
    const size_t end = std::min(pointer.find('/', start), pointer.size());
    const std::string part = pointer.substr(start, end - start);
    if (!part.empty() && part.find_first_not_of("0123456789") != std::string::npos) {
      out += (out.empty() ? "" : "/") + part;
    }
    start = end + 1;
  }
  return out;
}

bool is_neutral(const std::string& pointer) {
  const std::string cls = field_class(pointer);
  for (const auto& [prefix, why] : neutral_fields()) {
    if (cls == prefix || cls.rfind(prefix + "/", 0) == 0) return true;
  }
  return false;
}

// Every way one leaf changes: numbers scaled, negated and bumped, flags flipped, strings
// extended, arrays with one element bumped, one appended, the last dropped.
std::vector<json> mutations(const json& value) {
  std::vector<json> out;
  if (value.is_boolean()) {
    out.push_back(!value.get<bool>());
  } else if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    for (int64_t m : {v + 1, v * 2, -v - 1}) {
      if (m != v) out.push_back(m);
    }
  } else if (value.is_number()) {
    const double v = value.get<double>();
    for (double m : {v * 1.5, -v - 1, v + 1}) {
      if (m != v) out.push_back(m);
    }
  } else if (value.is_string()) {
    out.push_back(value.get<std::string>() + "x");
  } else if (value.is_array()) {
    if (!value.empty()) {
      json bumped = value;
      bumped[0] = bumped[0].is_number_integer() ? json(bumped[0].get<int64_t>() + 1) : json("x");
      out.push_back(bumped);
      json dropped = value;
      dropped.erase(dropped.size() - 1);
      out.push_back(dropped);
    }
    json grown = value;
    grown.push_back(value.empty() ? json(1) : value.back());
    out.push_back(grown);
  }
  return out;
}

// Leaves of `value` under `pointer` (arrays of numbers count as one leaf).
void leaves(const json& value, const std::string& pointer, std::vector<std::string>& out) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) leaves(child, pointer + "/" + key, out);
  } else if (value.is_array() && !value.empty() && value[0].is_object()) {
    for (size_t i = 0; i < value.size(); ++i)
      leaves(value[i], pointer + "/" + std::to_string(i), out);
  } else {
    out.push_back(pointer);
  }
}

TEST(EvidenceGateProperty, EveryChangeToAConclusionIsRejected) {
  const json valid = testing::valid_run_report();
  ASSERT_THAT(check_report(valid), ::testing::IsEmpty());
  ASSERT_THAT(valid["summary"]["speedups"], ::testing::SizeIs(2));

  // Which parts to mutate: everything but the samples, plus every field of one warm-up and two
  // measured samples of each arm (the samples are built alike, so these stand for all).
  std::vector<std::string> pointers;
  json without_samples = valid;
  without_samples.erase("samples");
  leaves(without_samples, "", pointers);
  std::map<std::string, int> picked;
  for (size_t i = 0; i < valid["samples"].size(); ++i) {
    const json& s = valid["samples"][i];
    const std::string key = s["arm"].get<std::string>() + (s["warmup"].get<bool>() ? "w" : "m");
    if (picked[key]++ >= (s["warmup"].get<bool>() ? 1 : 2)) continue;
    leaves(s, "/samples/" + std::to_string(i), pointers);
  }

  size_t n_mutations = 0, n_rejected = 0;
  for (const std::string& pointer : pointers) {
    const json::json_pointer at(pointer);
    for (const json& changed : mutations(valid[at])) {
      json report = valid;
      report[at] = changed;
      ++n_mutations;
      const auto violations = check_report(report);
      if (!violations.empty()) {
        ++n_rejected;
        continue;
      }
      // It passed: then it must not change a conclusion. Every figure, claim and finding that
      // the changed report's data supports must be what the valid report says ...
      json summary;
      try {
        summary = summarize_run(report);
      } catch (const std::exception& e) {
        ADD_FAILURE() << pointer << " = " << changed.dump() << " passed the gate: " << e.what();
        continue;
      }
      const bool same_conclusions = summary == valid["summary"];
      // ... unless the field is one no conclusion is drawn from (then the claims must hold).
      EXPECT_TRUE(same_conclusions || is_neutral(pointer))
          << pointer << " = " << changed.dump() << " passed the gate but changes "
          << summary.dump().substr(0, 400);
      EXPECT_EQ(summary["speedups"].size(), valid["summary"]["speedups"].size()) << pointer;
      EXPECT_EQ(summary["equivalence"], valid["summary"]["equivalence"]) << pointer;
    }
  }
  // The walk really covers the report: hundreds of changes, most of them rejected.
  EXPECT_GT(n_mutations, 500u);
  EXPECT_GT(n_rejected, n_mutations * 3 / 4);
  std::cout << n_rejected << " of " << n_mutations << " single-field changes rejected\n";
}

}  // namespace
}  // namespace augur::bench
