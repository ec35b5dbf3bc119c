// Binds the arguments of a call to a filter, test, method or global by Python's rules:
// positional first, then keywords by name, defaults for the rest. Too many arguments, an
// unknown keyword or a missing required one is a ValueFault naming the callee.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "chat/template_value.h"

namespace augur::chat {

class BoundArgs {
 public:
  // `names` are the parameters in order; a parameter not given is undefined (use `or_default`).
  BoundArgs(std::string_view callee, const CallArgs& args,
            std::initializer_list<std::string_view> names);

  // The parameter's value, or undefined when it was not passed.
  const Value& operator[](size_t index) const { return values_[index]; }
  bool given(size_t index) const { return !values_[index].is_undefined(); }
  const Value& required(size_t index) const;
  std::string string_or(size_t index, std::string fallback) const;
  int64_t int_or(size_t index, int64_t fallback) const;
  bool bool_or(size_t index, bool fallback) const;

 private:
  std::string callee_;
  std::vector<std::string_view> names_;
  std::vector<Value> values_;
};

}  // namespace augur::chat
