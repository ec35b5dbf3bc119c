// Every rendering in shared/chat-templates/cases.jsonl (Python Jinja2 3.1, as transformers
// renders chat templates) reproduced byte for byte, and every refusal refused with the
// template's own message.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat_test_support.h"
#include "support/run_command.h"
#include "test_paths.h"

namespace augur {
namespace {

using nlohmann::ordered_json;

std::filesystem::path templates_dir() {
  return testing::shared_dir() / "chat-templates";
}

std::vector<ordered_json> load_cases() {
  std::vector<ordered_json> cases;
  std::ifstream in(templates_dir() / "cases.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) cases.push_back(ordered_json::parse(line));
  }
  return cases;
}

const std::vector<ordered_json>& all_cases() {
  static const std::vector<ordered_json> cases = load_cases();
  return cases;
}

ordered_json context_of(const ordered_json& c) {
  ordered_json context = ordered_json::object();
  context["messages"] = c["messages"];
  context["add_generation_prompt"] = c["add_generation_prompt"];
  context["bos_token"] = c["bos_token"];
  context["eos_token"] = c["eos_token"];
  return context;
}

TEST(ReferenceCases, FileHoldsAtLeastNinetyCases) {
  EXPECT_GE(all_cases().size(), 90u);
}

class ReferenceCase : public ::testing::TestWithParam<size_t> {};

TEST_P(ReferenceCase, RendersLikeJinja2) {
  const ordered_json& c = all_cases().at(GetParam());
  const std::string source =
      testing::slurp(templates_dir() / (c["template"].get<std::string>() + ".jinja"));
  ASSERT_FALSE(source.empty()) << c["template"];
  const auto tmpl = chat::ChatTemplate::parse(source);
  if (c.contains("expected_error")) {
    try {
      const std::string out = tmpl.render(context_of(c), testing::reference_clock());
      FAIL() << "rendered instead of raising: " << out;
    } catch (const chat::TemplateRaised& e) {
      EXPECT_EQ(std::string(e.what()), c["expected_error"].get<std::string>());
    }
    return;
  }
  EXPECT_EQ(tmpl.render(context_of(c), testing::reference_clock()),
            c["expected"].get<std::string>());
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  const ordered_json& c = all_cases().at(info.param);
  std::string name = c["template"].get<std::string>() + "_" + c["case"].get<std::string>() +
                     (c["add_generation_prompt"].get<bool>() ? "_genprompt" : "_nogenprompt");
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

std::vector<size_t> case_indices() {
  std::vector<size_t> indices(all_cases().size());
  for (size_t idx = 0; idx < indices.size(); ++idx) indices[idx] = idx;
  return indices;
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceCase, ::testing::ValuesIn(case_indices()), case_name);

}  // namespace
}  // namespace augur
