// TEMPORARY STUB (not committed): replaced by the h-jinja branch.
#pragma once
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include "common/error.h"
namespace augur::chat {
struct TemplateRaised : InvalidArgument { using InvalidArgument::InvalidArgument; };
class ChatTemplate {
 public:
  static ChatTemplate parse(std::string_view) { return {}; }
  std::string render(const nlohmann::ordered_json& c, std::chrono::system_clock::time_point) const {
    std::string out;
    for (const auto& m : c["messages"]) out += "<|im_start|>" + m["role"].get<std::string>() + "\n" + m["content"].get<std::string>() + "<|im_end|>\n";
    if (c["add_generation_prompt"].get<bool>()) out += "<|im_start|>assistant\n";
    return out;
  }
};
inline std::string_view chatml_template() { return ""; }
}
