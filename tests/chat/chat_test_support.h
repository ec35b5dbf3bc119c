// Helpers shared by the chat-template tests: the reference clock of cases.jsonl and a one-call
// render of template source.
#pragma once

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "chat/chat_template.h"

namespace augur::testing {

// 2026-12-03 09:00:00 in local time: the clock cases.jsonl was rendered with (strftime_now reads
// local time, as Python's datetime.now() does).
inline std::chrono::system_clock::time_point reference_clock() {
  std::tm local{};
  local.tm_year = 2026 - 1900;
  local.tm_mon = 11;
  local.tm_mday = 3;
  local.tm_hour = 9;
  local.tm_isdst = -1;
  return std::chrono::system_clock::from_time_t(std::mktime(&local));
}

inline std::string render(std::string_view source, const nlohmann::ordered_json& context =
                                                       nlohmann::ordered_json::object()) {
  return chat::ChatTemplate::parse(source).render(context, reference_clock());
}

}  // namespace augur::testing
