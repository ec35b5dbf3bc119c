#include "bench/prompt_file.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace augur::bench {

std::vector<PromptLine> read_prompt_file(const std::string& path, size_t max_prompts) {
  using nlohmann::json;
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot open prompts file {}", path));
  std::vector<PromptLine> prompts;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      throw FormatError(fmt::format("{}:{}: not a JSON object: {}", path, line_no, e.what()));
    }
    if (!j.is_object() || !j.contains("prompt") || !j["prompt"].is_string() ||
        j["prompt"].get_ref<const std::string&>().empty()) {
      throw FormatError(fmt::format("{}:{}: needs a non-empty string \"prompt\"", path, line_no));
    }
    PromptLine p;
    p.id = j.contains("id") ? (j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump())
                            : fmt::format("p{}", prompts.size());
    p.text = j["prompt"].get<std::string>();
    prompts.push_back(std::move(p));
    if (max_prompts > 0 && prompts.size() == max_prompts) break;
  }
  if (prompts.empty()) throw FormatError(fmt::format("no prompts in {}", path));
  return prompts;
}

}  // namespace augur::bench
