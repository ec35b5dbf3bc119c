#include "chat/template_args.h"

#include <algorithm>

namespace augur::chat {

BoundArgs::BoundArgs(std::string_view callee, const CallArgs& args,
                     std::initializer_list<std::string_view> names)
    : callee_(callee), names_(names), values_(names.size()) {
  if (args.positional.size() > names_.size()) {
    value_fault(callee_ + "() takes at most " + std::to_string(names_.size()) + " arguments, got " +
                std::to_string(args.positional.size()));
  }
  for (size_t idx = 0; idx < args.positional.size(); ++idx) values_[idx] = args.positional[idx];
  for (const auto& [key, value] : args.keyword) {
    const auto it = std::find(names_.begin(), names_.end(), key);
    if (it == names_.end()) value_fault(callee_ + "() got an unexpected keyword '" + key + "'");
    values_[static_cast<size_t>(it - names_.begin())] = value;
  }
}

const Value& BoundArgs::required(size_t index) const {
  if (values_[index].is_undefined()) {
    value_fault(callee_ + "() missing argument '" + std::string(names_[index]) + "'");
  }
  return values_[index];
}

std::string BoundArgs::string_or(size_t index, std::string fallback) const {
  if (!given(index) || values_[index].is_none()) return fallback;
  if (!values_[index].is_string()) {
    value_fault(callee_ + "(): argument '" + std::string(names_[index]) + "' must be a string");
  }
  return values_[index].as_string();
}

int64_t BoundArgs::int_or(size_t index, int64_t fallback) const {
  if (!given(index) || values_[index].is_none()) return fallback;
  if (values_[index].kind() != Value::Kind::Int) {
    value_fault(callee_ + "(): argument '" + std::string(names_[index]) + "' must be an int");
  }
  return values_[index].as_int();
}

bool BoundArgs::bool_or(size_t index, bool fallback) const {
  return given(index) ? values_[index].truthy() : fallback;
}

}  // namespace augur::chat
