// The chat page (GET /) in headless Chromium through puppeteer-core (tests/server/clients/
// chat_page.ts): a wrong API key shows an error, the right one the model's name, and two
// messages at temperature 0 stream in (partial texts seen) with the stats line, each equal to a
// direct greedy request; the first also to `augur run --temp 0` on the rendered chat prompt.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/greedy_reference.h"
#include "support/node_clients.h"
#include "support/serve_process.h"

namespace augur::testing {
namespace {

using Json = nlohmann::json;

constexpr int kMaxTokens = 32;

std::filesystem::path chromium() {
  if (const char* env = std::getenv("AUGUR_CHROMIUM")) return env;
  return "/usr/bin/chromium";
}

// Runs chat_page.js against a fresh keyed server; `planted_suffix` spoils the expected first
// answer to see the script fail.
CommandResult run_chat_page(const std::string& planted_suffix = "") {
  const auto model = models_dir() / "zoo-target-q8_0.gguf";
  const std::string key = "page-key-42";
  ServeProcess server({"-m", model.string(), "-t", "1", "--parallel", "1", "--api-key", key});
  const std::string first = "import os";
  const Json first_messages = Json::array({{{"role", "user"}, {"content", first}}});
  const auto expected =
      augur_run_greedy(model, rendered_chat_prompt(server, first_messages, key), kMaxTokens);
  const char* screenshot = std::getenv("AUGUR_CHAT_PAGE_SCREENSHOT");
  const Json config = {
      {"url", server.url()},
      {"api_key", key},
      {"model", "zoo-target-q8_0"},
      {"max_tokens", kMaxTokens},
      {"messages", {first, "class Stack:"}},
      {"first_text", expected.text + planted_suffix},
      {"chromium", chromium().string()},
      // AUGUR_CHAT_PAGE_SCREENSHOT=PATH keeps a picture of the page for a person to look at.
      {"screenshot", screenshot && planted_suffix.empty() ? Json(screenshot) : Json(nullptr)}};
  const auto path = temp_path("chat-page.json");
  std::ofstream(path) << config.dump(2);
  auto result = run_node_client("chat_page.js", quote(path));
  std::filesystem::remove(path);
  if (result.exit_code != 0) result.err += "\nserver log:\n" + server.log();
  return result;
}

TEST(ChatPage, StreamsGreedyAnswersWithStatsInHeadlessChromium) {
  AUGUR_REQUIRE_NODE_CLIENTS();
  ASSERT_TRUE(std::filesystem::exists(chromium()))
      << chromium() << " is missing: run scripts/install-deps.sh (or set AUGUR_SKIP_NODE_TESTS=1)";
  const auto result = run_chat_page();
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("checks passed"), std::string::npos) << result.out;
  std::cout << result.out;  // the script's checks, one line each, for ctest's log
}

// The checker sees a planted defect: a wrong expected answer fails the script.
TEST(ChatPage, ScriptFailsOnAWrongExpectedAnswer) {
  AUGUR_REQUIRE_NODE_CLIENTS();
  ASSERT_TRUE(std::filesystem::exists(chromium())) << chromium() << " is missing";
  const auto result = run_chat_page("planted");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("MISMATCH direct request"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace augur::testing
