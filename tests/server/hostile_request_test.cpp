// Bad input never hurts the server: every case answers with its status code and an OpenAI
// error object, and the server still answers /health and a real request afterwards. Clients
// that hang up mid-stream stop their generation and free their slot.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "support/raw_http.h"
#include "support/serve_process.h"
#include "support/sse.h"

namespace augur::testing {
namespace {

constexpr const char* kKey = "sekrit-key";
constexpr size_t kMaxBody = 64 * 1024;

struct HostileCase {
  std::string name;
  std::string method;  // GET or POST
  std::string path;
  std::string body;
  std::string auth;  // the Authorization header; empty: none
  int status;
  std::string message;  // a piece of the error message
};

std::string ok_auth() {
  return std::string("Bearer ") + kKey;
}

std::string long_prompt() {
  std::string p;
  for (int i = 0; i < 400; ++i) p += "def f" + std::to_string(i) + "(x): return x\n";
  return p;
}

std::vector<HostileCase> cases() {
  const std::string chat = "/v1/chat/completions";
  const std::string user = R"({"role":"user","content":"hi"})";
  std::vector<HostileCase> c = {
      {"invalid_json", "POST", chat, "{\"messages\": [", ok_auth(), 400, "not valid JSON"},
      {"not_an_object", "POST", chat, "[1,2,3]", ok_auth(), 400, "JSON object"},
      {"wrong_type", "POST", chat, R"({"messages":[)" + user + R"(],"temperature":"hot"})",
       ok_auth(), 400, "'temperature' must be a number"},
      {"messages_not_list", "POST", chat, R"({"messages":"hi"})", ok_auth(), 400, "list"},
      {"unknown_role", "POST", chat, R"({"messages":[{"role":"wizard","content":"x"}]})", ok_auth(),
       400, "'wizard' is unknown"},
      {"empty_messages", "POST", chat, R"({"messages":[]})", ok_auth(), 400, "empty"},
      {"no_messages", "POST", chat, R"({"model":"x"})", ok_auth(), 400, "'messages' is required"},
      {"n_2", "POST", chat, R"({"messages":[)" + user + R"(],"n":2})", ok_auth(), 400, "'n'"},
      {"prompt_too_long", "POST", "/v1/completions",
       nlohmann::json{{"prompt", long_prompt()}}.dump(), ok_auth(), 400,
       "more than the context of 512 tokens"},
      {"token_out_of_vocab", "POST", "/v1/completions", R"({"prompt":[1,2,999999]})", ok_auth(),
       400, "out of range"},
      {"body_too_large", "POST", chat, std::string(kMaxBody + 10, ' '), ok_auth(), 413,
       "--max-body"},
      {"non_utf8", "POST", chat,
       std::string(R"({"messages":[{"role":"user","content":"bad )") + "\xff\xfe" + R"("}]})",
       ok_auth(), 400, "not valid JSON"},
      {"missing_key", "POST", chat, R"({"messages":[)" + user + "]}", "", 401, "API key"},
      {"wrong_key", "POST", chat, R"({"messages":[)" + user + "]}", "Bearer nope", 401, "API key"},
      {"wrong_key_metrics", "GET", "/metrics", "", "Bearer nope", 401, "API key"},
      {"unknown_route", "GET", "/v1/nothing", "", ok_auth(), 404, "no route"},
      {"huge_max_tokens", "POST", chat, R"({"messages":[)" + user + R"(],"max_tokens":1e30})",
       ok_auth(), 400, "'max_tokens'"},
      {"deep_nesting", "POST", chat, std::string(20000, '[') + std::string(20000, ']'), ok_auth(),
       400, "JSON object"},
      {"apply_template_bad", "POST", "/apply-template", R"({"messages":[{"role":1}]})", ok_auth(),
       400, "role"},
  };
  return c;
}

class HostileRequests : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServeProcess({"-m", (models_dir() / "zoo-target-q8_0.gguf").string(), "-t", "1",
                                "--parallel", "2", "--queue", "32", "--api-key", kKey, "--max-body",
                                std::to_string(kMaxBody)});
  }
  static void TearDownTestSuite() { delete server_; }
  static httplib::Headers auth() { return {{"Authorization", ok_auth()}}; }
  // The server is alive and serving: /health ok and a small real completion works.
  static void expect_healthy(const std::string& after) {
    auto client = server_->client();
    const auto health = client.Get("/health");
    ASSERT_TRUE(health) << "no /health answer after " << after;
    EXPECT_EQ(health->status, 200) << after;
    const auto res =
        client.Post("/v1/completions", auth(),
                    R"({"prompt":"def f(x):","max_tokens":4,"temperature":0})", "application/json");
    ASSERT_TRUE(res) << after;
    EXPECT_EQ(res->status, 200) << after << ": " << res->body;
  }
  static ServeProcess* server_;
};
ServeProcess* HostileRequests::server_ = nullptr;

TEST_F(HostileRequests, EveryCaseGetsItsStatusAndTheServerStaysUp) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    auto client = server_->client();
    httplib::Headers headers;
    if (!c.auth.empty()) headers.emplace("Authorization", c.auth);
    const auto res = c.method == "GET"
                         ? client.Get(c.path.c_str(), headers)
                         : client.Post(c.path.c_str(), headers, c.body, "application/json");
    ASSERT_TRUE(res) << "no answer";
    EXPECT_EQ(res->status, c.status) << res->body;
    const auto body = nlohmann::json::parse(res->body, nullptr, false);
    ASSERT_FALSE(body.is_discarded()) << "error body is not JSON: " << res->body;
    ASSERT_TRUE(body.contains("error")) << res->body;
    EXPECT_EQ(body["error"]["code"], c.status);
    EXPECT_NE(body["error"]["message"].get<std::string>().find(c.message), std::string::npos)
        << res->body;
    expect_healthy(c.name);
  }
  // /health needs no key; a right key works.
  auto client = server_->client();
  EXPECT_EQ(client.Get("/health")->status, 200);
  EXPECT_EQ(client.Get("/v1/models", auth())->status, 200);
  EXPECT_TRUE(server_->running());
}

// Clients that hang up after a few streamed tokens: each generation stops, every slot is free
// again, and the server serves on.
TEST_F(HostileRequests, DisconnectsMidStreamFreeTheirSlots) {
  std::vector<std::thread> clients;
  for (int c = 0; c < 20; ++c) {
    clients.emplace_back([c] {
      const nlohmann::json body = {{"prompt", "def f" + std::to_string(c) + "(x):"},
                                   {"max_tokens", 400},
                                   {"temperature", 0.8},
                                   {"ignore_eos", true},
                                   {"stream", true}};
      const std::string got = post_and_hang_up(server_->port(), "/v1/completions", body.dump(),
                                               "data: ", 3, "Authorization: " + ok_auth() + "\r\n");
      EXPECT_NE(got.find("200 OK"), std::string::npos) << got.substr(0, 200);
    });
  }
  for (auto& t : clients) t.join();
  // Generation notices the closed socket at its next write; give it a moment, then no slot may
  // be busy and nobody queued.
  auto client = server_->client();
  std::string metrics;
  for (int i = 0; i < 200; ++i) {
    metrics = client.Get("/metrics", auth())->body;
    if (metrics.find("augur_slots_busy 0\n") != std::string::npos &&
        metrics.find("augur_queue_depth 0\n") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(metrics.find("augur_slots_busy 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("augur_queue_depth 0\n"), std::string::npos) << metrics;
  expect_healthy("20 disconnects");
}

}  // namespace
}  // namespace augur::testing
