// The server starts, answers /health, /v1/models and /metrics, and stops cleanly on SIGTERM.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/serve_process.h"

namespace augur::testing {
namespace {

std::vector<std::string> zoo_args() {
  return {"-m", (models_dir() / "zoo-target-q8_0.gguf").string(), "-t", "1", "--parallel", "2"};
}

TEST(ServeHealth, AnswersAndStopsOnSigterm) {
  ServeProcess server(zoo_args());
  auto client = server.client();
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(nlohmann::json::parse(health->body)["status"], "ok");
  auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  ASSERT_EQ(models->status, 200);
  const auto list = nlohmann::json::parse(models->body);
  EXPECT_EQ(list["object"], "list");
  EXPECT_EQ(list["data"][0]["id"], "zoo-target-q8_0");
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("augur_slots 2\n"), std::string::npos) << metrics->body;
  EXPECT_EQ(server.stop(SIGTERM), 0) << server.log();
  EXPECT_NE(server.log().find("stopped"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace augur::testing
