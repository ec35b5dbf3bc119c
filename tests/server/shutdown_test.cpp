// SIGINT/SIGTERM: in-flight streams end with an error event (no [DONE]), requests waiting for
// a session get 503, and the process exits 0 promptly; nothing hangs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "support/raw_http.h"
#include "support/serve_process.h"
#include "support/sse.h"

namespace augur::testing {
namespace {

std::string long_stream_body(int i) {
  return nlohmann::json{{"prompt", "def f" + std::to_string(i) + "(x):"},
                        {"max_tokens", 100000},
                        {"ignore_eos", true},
                        {"temperature", 0.8},
                        {"stream", true}}
      .dump();
}

void expect_clean_stop(int sig) {
  ServeProcess server({"-m", (models_dir() / "zoo-target-q8_0.gguf").string(), "-t", "1",
                       "--parallel", "2", "--draft", "none", "-c", "512"});
  // Two streams fill both sessions; a third request waits in the queue.
  std::vector<std::string> streams(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      streams[static_cast<size_t>(i)] =
          post_and_hang_up(server.port(), "/v1/completions", long_stream_body(i), "\n\n", 1 << 30);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(server.stop(sig, 20), 0) << server.log();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);
  for (auto& t : clients) t.join();
  int ended_with_error = 0, refused = 0;
  for (const auto& s : streams) {
    const auto head_end = s.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << s.substr(0, 200);
    if (s.find(" 503 ") != std::string::npos && s.find(" 503 ") < head_end) {
      ++refused;
      continue;
    }
    // The chunked body's event lines: the last data line is an error, and no [DONE].
    EXPECT_EQ(s.find("data: [DONE]"), std::string::npos);
    const auto last_data = s.rfind("data: ");
    ASSERT_NE(last_data, std::string::npos);
    const std::string error_event = "data: {\"error\"";
    EXPECT_EQ(s.compare(last_data, error_event.size(), error_event), 0) << s.substr(last_data, 120);
    EXPECT_NE(s.find("shutting down", last_data), std::string::npos);
    ++ended_with_error;
  }
  EXPECT_EQ(ended_with_error, 2);
  EXPECT_EQ(refused, 1);
}

TEST(ServeShutdown, SigtermEndsStreamsWithAnErrorEvent) {
  expect_clean_stop(SIGTERM);
}
TEST(ServeShutdown, SigintEndsStreamsWithAnErrorEvent) {
  expect_clean_stop(SIGINT);
}

}  // namespace
}  // namespace augur::testing
