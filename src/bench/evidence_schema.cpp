#include "bench/evidence_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace augur::bench::evidence {

namespace {

using nlohmann::json;

constexpr size_t kMaxSchemaLines = 20;

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

}  // namespace

std::string describe(const json& value) {
  if (value.is_string() || value.is_number() || value.is_boolean()) {
    return fmt::format("{} {}", value.type_name(), value.dump());
  }
  if (value.is_null()) return "null";
  return std::string("an ") + value.type_name();
}

bool close(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max({std::abs(a), std::abs(b), 1e-300});
}

bool same_measurement(double a, double b) {
  constexpr double kSameMeasurement = 1e-9;  // relative: two timings this close are one copied
  return std::abs(a - b) <= kSameMeasurement * std::max(std::abs(a), std::abs(b));
}

std::string summary_difference(const json& derived, const json& reported, const std::string& path) {
  if (derived.is_object()) {
    if (!reported.is_object()) return fmt::format("'{}' is {}", path, describe(reported));
    for (const auto& [key, value] : derived.items()) {
      const std::string sub = path.empty() ? key : path + "." + key;
      if (!reported.contains(key)) return fmt::format("'{}' is missing", sub);
      if (auto diff = summary_difference(value, reported[key], sub); !diff.empty()) return diff;
    }
    return "";
  }
  if (derived.is_array()) {
    if (!reported.is_array() || reported.size() != derived.size()) {
      return fmt::format("'{}' is {} but the samples give {}", path, reported.dump(),
                         derived.dump());
    }
    for (size_t i = 0; i < derived.size(); ++i) {
      if (auto diff = summary_difference(derived[i], reported[i], fmt::format("{}[{}]", path, i));
          !diff.empty()) {
        return diff;
      }
    }
    return "";
  }
  if (derived.is_number()) {
    const bool ok =
        reported.is_number() &&
        (derived.is_number_integer()
             ? reported.is_number_integer() && reported.get<int64_t>() == derived.get<int64_t>()
             : close(reported.get<double>(), derived.get<double>()));
    return ok ? ""
              : fmt::format("'{}' is {} but the samples give {}", path, reported.dump(),
                            derived.dump());
  }
  return derived == reported ? ""
                             : fmt::format("'{}' is {} but the samples give {}", path,
                                           reported.dump(), derived.dump());
}

void SchemaReader::defect(std::string message) {
  ++n_defects_;
  if (messages_.size() < kMaxSchemaLines) messages_.push_back(std::move(message));
}

void SchemaReader::emit(std::vector<Violation>& out) const {
  for (const auto& message : messages_) out.push_back({"SCHEMA", message});
  if (n_defects_ > messages_.size()) {
    out.push_back({"SCHEMA", fmt::format("{} more structural defects not listed",
                                         n_defects_ - messages_.size())});
  }
}

const json* SchemaReader::field(const json& object, std::string_view key, std::string_view where,
                                bool required) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) defect(fmt::format("{}: missing '{}'", where, key));
    return nullptr;
  }
  return &*it;
}

const json* SchemaReader::entry(const json& array, size_t pos, std::string_view name) {
  const json& value = array[pos];
  if (value.is_object()) return &value;
  defect(fmt::format("{}[{}] is {}, expected an object", name, pos, describe(value)));
  return nullptr;
}

void SchemaReader::require(const json& object, std::string_view where,
                           std::initializer_list<FieldSpec> specs) {
  for (const FieldSpec& spec : specs) read(object, spec, where, true);
}

const json* SchemaReader::object(const json& parent, std::string_view key, std::string_view where,
                                 bool required) {
  return read(parent, {key, Type::kObject}, where, required) ? &parent[key] : nullptr;
}

const json* SchemaReader::array(const json& parent, std::string_view key, std::string_view where,
                                bool required) {
  return read(parent, {key, Type::kArray}, where, required) ? &parent[key] : nullptr;
}

std::optional<std::string> SchemaReader::string(const json& parent, std::string_view key,
                                                std::string_view where, bool required) {
  if (!read(parent, {key, Type::kString}, where, required)) return std::nullopt;
  return parent[key].get<std::string>();
}

std::optional<bool> SchemaReader::boolean(const json& parent, std::string_view key,
                                          std::string_view where, bool required) {
  if (!read(parent, {key, Type::kBool}, where, required)) return std::nullopt;
  return parent[key].get<bool>();
}

std::optional<int64_t> SchemaReader::integer(const json& parent, std::string_view key,
                                             std::string_view where, Bound bound, bool required) {
  if (!read(parent, {key, Type::kInt, bound}, where, required)) return std::nullopt;
  return parent[key].get<int64_t>();
}

std::optional<double> SchemaReader::number(const json& parent, std::string_view key,
                                           std::string_view where, Bound bound, bool required) {
  if (!read(parent, {key, Type::kNumber, bound}, where, required)) return std::nullopt;
  return parent[key].get<double>();
}

std::optional<std::vector<int64_t>> SchemaReader::integers(const json& parent, std::string_view key,
                                                           std::string_view where, Bound bound) {
  if (!read(parent, {key, Type::kIntArray, bound}, where, true)) return std::nullopt;
  return parent[key].get<std::vector<int64_t>>();
}

std::optional<std::vector<double>> SchemaReader::samples(const json& parent, std::string_view key,
                                                         std::string_view where, Bound bound) {
  const json* values = array(parent, key, where);
  if (values == nullptr) return std::nullopt;
  if (values->empty()) {
    defect(fmt::format("{}: '{}' is empty, expected measured samples", where, key));
    return std::nullopt;
  }
  std::vector<double> out;
  for (size_t pos = 0; pos < values->size(); ++pos) {
    const json& value = (*values)[pos];
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        !within(value.get<double>(), bound)) {
      defect(fmt::format("{}: '{}'[{}] is {}, expected a finite number{}", where, key, pos,
                         describe(value), bound_text(bound)));
      return std::nullopt;
    }
    out.push_back(value.get<double>());
  }
  return out;
}

bool SchemaReader::read(const json& parent, const FieldSpec& spec, std::string_view where,
                        bool required) {
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
        if (!integer_ok((*value)[pos], fmt::format("{}[{}]", what, pos), spec.bound)) return false;
      }
      return true;
    }
  }
  return false;
}

bool SchemaReader::integer_ok(const json& value, std::string_view what, Bound bound) {
  const bool fits = value.is_number_integer() &&
                    !(value.is_number_unsigned() &&
                      value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()));
  return expect(fits && within(value.get<int64_t>(), bound), what, value,
                fmt::format("an integer{}", bound_text(bound)));
}

bool SchemaReader::expect(bool ok, std::string_view what, const json& value,
                          std::string_view expected) {
  if (!ok) defect(fmt::format("{} is {}, expected {}", what, describe(value), expected));
  return ok;
}

}  // namespace augur::bench::evidence
