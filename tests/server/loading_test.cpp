// The server listens before the model is loaded: until set_backend(), GET /health answers 503
// {"status":"loading"} and every other endpoint 503 with an error object; then they serve.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "gguf/file.h"
#include "model/model.h"
#include "server/http_server.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace augur::testing {
namespace {

TEST(ServeLoading, HealthIs503UntilTheBackendIsSet) {
  server::ServerOptions options;
  options.port = 0;
  options.log_requests = false;
  server::HttpServer httpd(options);
  httpd.bind();
  std::thread serving([&] { httpd.serve(); });
  httplib::Client client("127.0.0.1", httpd.bound_port());
  client.set_read_timeout(30, 0);

  const auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(nlohmann::json::parse(health->body)["status"], "loading");
  const auto chat =
      client.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})",
                  "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 503);
  EXPECT_EQ(nlohmann::json::parse(chat->body)["error"]["message"], "the model is still loading");
  EXPECT_TRUE(chat->has_header("Retry-After"));
  EXPECT_EQ(client.Get("/v1/models")->status, 503);

  // Loaded: one session over zoo-target.
  const auto model = model::load_model(models_dir() / "zoo-target-q8_0.gguf");
  const auto tok = tokenizer::Tokenizer::from_gguf(model->file());
  kernels::ThreadPool pool(1);
  std::vector<std::unique_ptr<server::Slot>> slots;
  slots.push_back(std::make_unique<server::Slot>());
  slots[0]->generator = std::make_unique<engine::Generator>(*model, pool, 128, 64);
  server::SlotPool slot_pool(std::move(slots), 2);
  server::Backend backend;
  backend.tok = tok.get();
  backend.slots = &slot_pool;
  backend.model_id = "zoo";
  backend.n_ctx = 128;
  backend.render_chat = [](nlohmann::ordered_json) { return std::string("hi"); };
  httpd.set_backend(backend);

  EXPECT_EQ(client.Get("/health")->status, 200);
  EXPECT_EQ(nlohmann::json::parse(client.Get("/v1/models")->body)["data"][0]["id"], "zoo");
  const auto done =
      client.Post("/v1/completions", R"({"prompt":"def f(x):","max_tokens":3,"temperature":0})",
                  "application/json");
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200) << done->body;
  httpd.stop();
  serving.join();
}

}  // namespace
}  // namespace augur::testing
