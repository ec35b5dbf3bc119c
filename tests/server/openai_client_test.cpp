// augur serve through real clients: the official `openai` npm package (tests/server/clients/
// openai_client.ts, compiled with tsc --strict) and the curl binary. Greedy answers, streamed
// and not, must equal `augur run --temp 0 --draft none` on the same prompt, with no drafter,
// the auto policy and a draft model; the client script checks the rest of the API surface
// (stop, max_tokens, seed, logprobs, usage, errors, API key) through the client's own types.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/greedy_reference.h"
#include "support/node_clients.h"
#include "support/serve_process.h"

namespace augur::testing {
namespace {

using Json = nlohmann::json;

constexpr int kMaxTokens = 24;
constexpr const char* kPrompt = "def fibonacci(n):";

std::filesystem::path target_model() {
  return models_dir() / "zoo-target-q8_0.gguf";
}

Json chat_messages() {
  return Json::array(
      {{{"role", "user"}, {"content", "Write a Python function that adds two numbers."}}});
}

std::vector<std::string> serve_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"-m", target_model().string(), "-t", "1", "--parallel", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

Json expected_json(const GreedyText& greedy) {
  return {
      {"max_tokens", kMaxTokens}, {"text", greedy.text}, {"finish_reason", greedy.finish_reason}};
}

// The client script's configuration: where the server is and what its greedy answers must be.
Json client_config(const ServeProcess& server, const std::string& drafter, const std::string& key) {
  Json completion = expected_json(augur_run_greedy(target_model(), kPrompt, kMaxTokens));
  completion["prompt"] = kPrompt;
  const std::string chat_prompt = rendered_chat_prompt(server, chat_messages(), key);
  Json chat = expected_json(augur_run_greedy(target_model(), chat_prompt, kMaxTokens));
  chat["messages"] = chat_messages();
  return {{"base_url", server.url() + "/v1"},
          {"model", "zoo-target-q8_0"},
          {"api_key", key.empty() ? Json(nullptr) : Json(key)},
          {"drafter", drafter},
          // The auto policy's choices follow live timings, and so do its sampled tokens.
          {"seed_reproducible", drafter != "auto"},
          {"completion", std::move(completion)},
          {"chat", std::move(chat)}};
}

CommandResult run_openai_client(const Json& config) {
  const auto path = temp_path("openai-client.json");
  std::ofstream(path) << config.dump(2);
  auto result = run_node_client("openai_client.js", quote(path));
  std::filesystem::remove(path);
  return result;
}

void expect_client_passes(const std::vector<std::string>& extra_args, const std::string& drafter,
                          const std::string& key = "") {
  auto args = serve_args(extra_args);
  if (!key.empty()) args.insert(args.end(), {"--api-key", key});
  ServeProcess server(args);
  const auto result = run_openai_client(client_config(server, drafter, key));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err << "\nserver log:\n" << server.log();
  EXPECT_NE(result.out.find("checks passed"), std::string::npos) << result.out;
  std::cout << result.out;  // the script's checks, one line each, for ctest's log
}

TEST(OpenAiClient, GreedyEqualsRunWithoutDrafterAndApiKeyIsEnforced) {
  AUGUR_REQUIRE_NODE_CLIENTS();
  expect_client_passes({"--draft", "none"}, "none", "test-key-123");
}

TEST(OpenAiClient, GreedyEqualsRunWithAutoDrafter) {
  AUGUR_REQUIRE_NODE_CLIENTS();
  expect_client_passes({}, "auto");
}

TEST(OpenAiClient, GreedyEqualsRunWithDraftModel) {
  AUGUR_REQUIRE_NODE_CLIENTS();
  expect_client_passes({"--draft", "model", "-md", (models_dir() / "zoo-draft-f16.gguf").string()},
                       "model");
}

// The checker sees a planted defect: a wrong expected text fails the script and names the check.
TEST(OpenAiClient, ScriptFailsOnAWrongExpectedText) {
  AUGUR_REQUIRE_NODE_CLIENTS();
  ServeProcess server(serve_args({"--draft", "none"}));
  Json config = client_config(server, "none", "");
  config["completion"]["text"] = config["completion"]["text"].get<std::string>() + "x";
  const auto result = run_openai_client(config);
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("MISMATCH [completions greedy]"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace augur::testing
