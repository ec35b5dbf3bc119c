// The prefix cache: a request that extends an earlier conversation reuses its K/V rows even
// after its session served other prompts (the rows were kept in the PrefixStore and restored),
// and the answer is bitwise what a fresh server gives. Without a budget the rows are lost.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/serve_process.h"

namespace augur::testing {
namespace {

using Json = nlohmann::json;

std::vector<std::string> args(const std::string& cache_mib) {
  return {"-m",          (models_dir() / "zoo-target-q8_0.gguf").string(),
          "-t",          "2",
          "--parallel",  "1",
          "--cache-mib", cache_mib,
          "--draft",     "none"};
}

Json complete(const ServeProcess& server, const std::string& prompt) {
  auto client = server.client();
  const Json body = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}};
  const auto res = client.Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  return Json::parse(res->body);
}

int64_t reused(const Json& response) {
  return response["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
}

const std::string kFirst =
    "import os\nimport sys\n\n\ndef read_config(path):\n    with open(path) as f:\n"
    "        return f.read()\n\n\ndef main():\n";
const std::string kOther = "class Stack:\n    def __init__(self):\n        self.items = []\n";

TEST(PrefixCache, RowsComeBackAfterTheSessionServedAnotherPrompt) {
  ServeProcess server(args("64"));
  const Json first = complete(server, kFirst);
  const int64_t first_tokens = first["usage"]["prompt_tokens"];
  ASSERT_GT(first_tokens, 30);
  const Json other = complete(server, kOther);  // the only session now holds other rows
  EXPECT_LT(reused(other), 3);
  // The first conversation goes on: its prompt is a prefix of this one.
  const std::string next = kFirst + first["choices"][0]["text"].get<std::string>() + "\n";
  const Json again = complete(server, next);
  EXPECT_GE(reused(again), first_tokens - 1) << again.dump();
  EXPECT_EQ(again["augur"]["prompt_tokens_reused"], reused(again));
  const std::string metrics = server.client().Get("/metrics")->body;
  EXPECT_NE(metrics.find("augur_prefix_cache_restores_total 1\n"), std::string::npos) << metrics;

  // Bitwise the answer of a server that computes every row itself.
  ServeProcess fresh(args("0"));
  const Json reference = complete(fresh, next);
  EXPECT_EQ(reused(reference), 0);
  EXPECT_EQ(again["choices"][0]["text"], reference["choices"][0]["text"]);
}

TEST(PrefixCache, WithoutABudgetTheRowsAreRecomputed) {
  ServeProcess server(args("0"));
  const Json first = complete(server, kFirst);
  (void)complete(server, kOther);
  const std::string next = kFirst + first["choices"][0]["text"].get<std::string>() + "\n";
  EXPECT_LT(reused(complete(server, next)), 3);
}

// With the rows still in its session, a follow-up reuses them without the store.
TEST(PrefixCache, SessionKeepsItsRowsForTheNextTurn) {
  ServeProcess server(args("0"));
  const Json first = complete(server, kFirst);
  const std::string next = kFirst + first["choices"][0]["text"].get<std::string>() + "\n";
  EXPECT_GE(reused(complete(server, next)), first["usage"]["prompt_tokens"].get<int64_t>() - 1);
}

}  // namespace
}  // namespace augur::testing
