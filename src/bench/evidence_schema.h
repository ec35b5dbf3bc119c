// Typed reading of benchmark reports for the evidence gate: every structural defect (a missing
// field, a wrong type, a value out of bounds) becomes one SCHEMA line naming where it is, and
// readers hand back nullopt instead of throwing, so a malformed report never crashes the gate.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/evidence_gate.h"

namespace augur::bench::evidence {

enum class Type { kString, kBool, kInt, kNumber, kObject, kArray, kIntArray };
enum class Bound { kAny, kNonNegative, kPositive };

// A field whose presence and type SCHEMA checks but whose value no rule reads.
struct FieldSpec {
  std::string_view key;
  Type type;
  Bound bound = Bound::kNonNegative;  // for numbers, integers and integer arrays
};

// "string \"x\"", "number 3", "an object": how a defect message shows a value.
std::string describe(const nlohmann::json& value);

// True when a and b agree to a relative 1e-6 (both written from the same doubles).
bool close(double a, double b);
// True when two timings are so close (relative 1e-9) that one is a copy of the other.
bool same_measurement(double a, double b);
// The first difference between a summary derived from samples and the report's ("" when they
// agree): every key of `derived` must be in `reported`, integers equal, other numbers close().
std::string summary_difference(const nlohmann::json& derived, const nlohmann::json& reported,
                               const std::string& path);

class SchemaReader {
 public:
  void defect(std::string message);
  bool clean() const { return n_defects_ == 0; }
  size_t n_defects() const { return n_defects_; }
  // The SCHEMA lines, folded after a fixed number (a broken harness breaks every sample).
  void emit(std::vector<Violation>& out) const;

  // Readers return nullptr / nullopt for a missing (JSON null counts as missing) or mistyped
  // field; a missing field is a defect only when required.
  const nlohmann::json* field(const nlohmann::json& object, std::string_view key,
                              std::string_view where, bool required = true);
  // Element `pos` of `array` (named `name`) when it is an object.
  const nlohmann::json* entry(const nlohmann::json& array, size_t pos, std::string_view name);
  void require(const nlohmann::json& object, std::string_view where,
               std::initializer_list<FieldSpec> specs);
  const nlohmann::json* object(const nlohmann::json& parent, std::string_view key,
                               std::string_view where, bool required = true);
  const nlohmann::json* array(const nlohmann::json& parent, std::string_view key,
                              std::string_view where, bool required = true);
  std::optional<std::string> string(const nlohmann::json& parent, std::string_view key,
                                    std::string_view where, bool required = true);
  std::optional<bool> boolean(const nlohmann::json& parent, std::string_view key,
                              std::string_view where, bool required = true);
  std::optional<int64_t> integer(const nlohmann::json& parent, std::string_view key,
                                 std::string_view where, Bound bound = Bound::kNonNegative,
                                 bool required = true);
  std::optional<double> number(const nlohmann::json& parent, std::string_view key,
                               std::string_view where, Bound bound = Bound::kNonNegative,
                               bool required = true);
  std::optional<std::vector<int64_t>> integers(const nlohmann::json& parent, std::string_view key,
                                               std::string_view where,
                                               Bound bound = Bound::kNonNegative);
  // A non-empty array of finite numbers within `bound` (measured samples).
  std::optional<std::vector<double>> samples(const nlohmann::json& parent, std::string_view key,
                                             std::string_view where,
                                             Bound bound = Bound::kPositive);

 private:
  bool read(const nlohmann::json& parent, const FieldSpec& spec, std::string_view where,
            bool required);
  bool integer_ok(const nlohmann::json& value, std::string_view what, Bound bound);
  bool expect(bool ok, std::string_view what, const nlohmann::json& value,
              std::string_view expected);

  std::vector<std::string> messages_;
  size_t n_defects_ = 0;
};

}  // namespace augur::bench::evidence
