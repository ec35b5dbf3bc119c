#include "bench/arms.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "common/error.h"
#include "engine/generator.h"
#include "spec/auto_sources.h"
#include "spec/head_drafters.h"

namespace augur::bench {
namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

[[noreturn]] void bad_arm(std::string_view text, std::string_view why) {
  throw InvalidArgument(
      fmt::format("arm '{}': {} (use ar, spec:model:K, spec:eagle3:K, spec:eagle3-argmax:K, "
                  "spec:dflash:K, spec:dflash-argmax:K, spec:mtp:K, spec:mtp-argmax:K, "
                  "spec:ngram:K[:N], spec:layerskip:L:K or spec:auto[:SOURCES][:K], each "
                  "optionally followed by @token or @block)",
                  text, why));
}

int number(std::string_view arm, const std::string& part, int lo, int hi, std::string_view what) {
  int value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc() || end != part.data() + part.size()) {
    bad_arm(arm, fmt::format("{} '{}' is not a whole number", what, part));
  }
  if (value < lo || value > hi)
    bad_arm(arm, fmt::format("{} {} is not in {}..{}", what, value, lo, hi));
  return value;
}

ArmSpec parse_arm_body(std::string_view text);

}  // namespace

std::string ArmSpec::config_key() const {
  if (!spec) return "ar";
  if (rule) {
    ArmSpec any_rule = *this;
    any_rule.rule.reset();
    return any_rule.config_key() +
           (*rule == spec::SampledRule::kToken ? "/accept-token" : "/accept-block");
  }
  if (drafter == "model") return fmt::format("spec/model/k{}", draft_max);
  if (spec::reads_head(drafter)) {
    return fmt::format("spec/{}/k{}", drafter, draft_max);
  }
  if (drafter == "ngram") return fmt::format("spec/ngram{}/k{}", ngram_max, draft_max);
  if (drafter == "auto") {
    return fmt::format("spec/auto/{}/k{}", auto_sources.empty() ? "all" : auto_sources, draft_max);
  }
  return fmt::format("spec/layerskip{}/k{}", layers, draft_max);
}

ArmSpec parse_arm(std::string_view text) {
  std::optional<spec::SampledRule> rule;
  std::string_view body = text;
  if (const size_t at = text.find('@'); at != std::string_view::npos) {
    const std::string_view which = text.substr(at + 1);
    if (which == "token") {
      rule = spec::SampledRule::kToken;
    } else if (which == "block") {
      rule = spec::SampledRule::kBlock;
    } else {
      bad_arm(text, fmt::format("'@{}' is not an acceptance rule (token or block)", which));
    }
    body = text.substr(0, at);
    if (body == "ar") bad_arm(text, "an AR arm has no acceptance rule");
  }
  ArmSpec arm = parse_arm_body(body);
  arm.name = std::string(text);
  arm.rule = rule;
  return arm;
}

namespace {

ArmSpec parse_arm_body(std::string_view text) {
  const auto parts = split(text, ':');
  ArmSpec arm;
  arm.name = std::string(text);
  if (parts.size() == 1 && parts[0] == "ar") return arm;
  if (parts[0] != "spec" || parts.size() < 2 || (parts.size() < 3 && parts[1] != "auto")) {
    bad_arm(text, "unknown form");
  }
  arm.spec = true;
  arm.drafter = parts[1];
  const int k_max = engine::kMaxDraft;
  if ((arm.drafter == "model" || spec::reads_head(arm.drafter)) && parts.size() == 3) {
    arm.draft_max = number(text, parts[2], 1, k_max, "K");
  } else if (arm.drafter == "ngram" && (parts.size() == 3 || parts.size() == 4)) {
    arm.draft_max = number(text, parts[2], 1, k_max, "K");
    if (parts.size() == 4) arm.ngram_max = number(text, parts[3], 1, 64, "N");
  } else if (arm.drafter == "auto" && parts.size() <= 4) {
    arm.draft_max = 8;
    size_t next = 2;
    if (next < parts.size() && !parts[next].empty() &&
        !std::isdigit(static_cast<unsigned char>(parts[next][0]))) {
      arm.auto_sources =
          spec::parse_auto_sources(parts[next], fmt::format("arm '{}'", text)).name();
      ++next;
    }
    if (next < parts.size()) arm.draft_max = number(text, parts[next++], 1, k_max, "K");
    if (next != parts.size()) bad_arm(text, "too many fields");
  } else if (arm.drafter == "layerskip" && parts.size() == 4) {
    arm.layers = number(text, parts[2], 1, 1 << 16, "L");
    arm.draft_max = number(text, parts[3], 1, k_max, "K");
  } else {
    bad_arm(text, "unknown drafter or wrong number of fields");
  }
  return arm;
}

}  // namespace

std::vector<ArmSpec> parse_arms(std::string_view list) {
  std::vector<ArmSpec> arms;
  for (const auto& item : split(list, ',')) {
    if (item.empty()) continue;
    arms.push_back(parse_arm(item));
    for (size_t i = 0; i + 1 < arms.size(); ++i) {
      if (arms[i].config_key() == arms.back().config_key()) {
        throw InvalidArgument(fmt::format("arms '{}' and '{}' are the same configuration",
                                          arms[i].name, arms.back().name));
      }
    }
  }
  if (arms.empty()) throw InvalidArgument("no arms given (e.g. --arms ar,spec:ngram:4)");
  return arms;
}

}  // namespace augur::bench
