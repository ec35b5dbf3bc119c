// Assertions shared by the evidence-gate tests.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "bench/evidence_gate.h"

namespace augur::bench {

inline std::set<std::string> rules_of(const std::vector<Violation>& violations) {
  std::set<std::string> rules;
  for (const Violation& violation : violations) rules.insert(violation.rule);
  return rules;
}

// The report trips `rule` and nothing else; returns the printed violations for message checks.
inline std::string expect_only_rule(const nlohmann::json& report, const std::string& rule) {
  const auto violations = check_report(report);
  const std::string text = format_violations(violations);
  EXPECT_THAT(rules_of(violations), ::testing::ElementsAre(rule)) << text;
  return text;
}

// The report trips `rule` (maybe among others).
inline std::string expect_rule(const nlohmann::json& report, const std::string& rule) {
  const auto violations = check_report(report);
  const std::string text = format_violations(violations);
  EXPECT_THAT(rules_of(violations), ::testing::Contains(rule)) << text;
  return text;
}

inline void expect_clean(const nlohmann::json& report) {
  const auto violations = check_report(report);
  EXPECT_THAT(violations, ::testing::IsEmpty()) << format_violations(violations);
}

}  // namespace augur::bench
