// The server's greedy answers are `augur run`'s, token for token: completions of real prompts
// at temperature 0 equal the CLI's text, with and without a drafter, streamed and not, and
// while 8 other clients stream other prompts at the same time (their forwards batched with
// ours: no cross-talk).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/run_command.h"
#include "support/serve_process.h"
#include "support/sse.h"

namespace augur::testing {
namespace {

constexpr int kTokens = 32;

std::filesystem::path target() {
  return models_dir() / "zoo-target-q8_0.gguf";
}

std::vector<std::string> code_prompts(size_t n) {
  std::ifstream in(models_dir() / "prompts-code.jsonl");
  std::vector<std::string> out;
  for (std::string line; out.size() < n && std::getline(in, line);) {
    out.push_back(nlohmann::json::parse(line)["prompt"].get<std::string>());
  }
  EXPECT_EQ(out.size(), n);
  return out;
}

// `augur run`'s greedy text for the prompt (AR, no drafter).
std::string cli_text(const std::string& prompt) {
  const auto file = temp_path("prompt.txt");
  std::ofstream(file, std::ios::binary) << prompt;
  const auto r =
      run_command(quote(augur_bin()) + " run -m " + quote(target()) + " -f " + quote(file) +
                  " -n " + std::to_string(kTokens) + " --temp 0 --draft none --json -t 1");
  std::filesystem::remove(file);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out)["text"].get<std::string>();
}

nlohmann::json completion_body(const std::string& prompt, bool stream, double temperature = 0) {
  return {{"prompt", prompt},
          {"max_tokens", kTokens},
          {"temperature", temperature},
          {"stream", stream},
          {"seed", 7}};
}

// POSTs the body; the completion text (from JSON or from the parsed stream) or a failure.
std::string complete(const ServeProcess& server, const nlohmann::json& body) {
  auto client = server.client();
  const auto res = client.Post("/v1/completions", body.dump(), "application/json");
  if (!res) return "(no response)";
  if (res->status != 200) return "(status " + std::to_string(res->status) + ") " + res->body;
  if (!body["stream"].get<bool>()) {
    const auto j = nlohmann::json::parse(res->body);
    return j["choices"][0]["text"].get<std::string>();
  }
  const SseStream s = parse_sse(res->body);
  if (!s.well_formed) return "(malformed stream: " + s.problem + ")";
  return s.text;
}

struct Config {
  std::string name;
  std::vector<std::string> args;
};

class SameAnswer : public ::testing::TestWithParam<Config> {
 protected:
  static void SetUpTestSuite() {
    prompts_ = new std::vector<std::string>(code_prompts(12));
    expected_ = new std::vector<std::string>();
    for (size_t i = 0; i < 3; ++i) expected_->push_back(cli_text((*prompts_)[i]));
  }
  static void TearDownTestSuite() {
    delete prompts_;
    delete expected_;
  }
  static std::vector<std::string>* prompts_;
  static std::vector<std::string>* expected_;
};
std::vector<std::string>* SameAnswer::prompts_ = nullptr;
std::vector<std::string>* SameAnswer::expected_ = nullptr;

TEST_P(SameAnswer, AsAugurRunStreamedAndNot) {
  std::vector<std::string> args = {"-m", target().string(), "-t", "2", "--parallel", "4"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  ServeProcess server(args);
  for (size_t i = 0; i < expected_->size(); ++i) {
    ASSERT_GT((*expected_)[i].size(), 10u);
    EXPECT_EQ(complete(server, completion_body((*prompts_)[i], false)), (*expected_)[i])
        << "prompt " << i;
    EXPECT_EQ(complete(server, completion_body((*prompts_)[i], true)), (*expected_)[i])
        << "prompt " << i << " streamed";
  }
  // The same again while 8 other clients stream (4 sessions: some wait in the queue).
  std::vector<std::string> others(8);
  std::vector<std::thread> background;
  for (size_t c = 0; c < others.size(); ++c) {
    background.emplace_back([&, c] {
      others[c] = complete(server, completion_body((*prompts_)[3 + c], true, c % 2 ? 0.8 : 0));
    });
  }
  for (size_t i = 0; i < expected_->size(); ++i) {
    EXPECT_EQ(complete(server, completion_body((*prompts_)[i], i % 2 == 1)), (*expected_)[i])
        << "prompt " << i << " under load";
  }
  for (auto& t : background) t.join();
  for (size_t c = 0; c < others.size(); ++c) {
    EXPECT_EQ(others[c].find("(malformed"), std::string::npos) << others[c];
    EXPECT_EQ(others[c].find("(status"), std::string::npos) << others[c];
  }
  // Greedy background clients got their own prompts' answers too.
  for (size_t c = 0; c < others.size(); c += 2) {
    EXPECT_EQ(others[c], complete(server, completion_body((*prompts_)[3 + c], false)))
        << "background client " << c;
  }
  EXPECT_EQ(server.stop(), 0) << server.log();
}

INSTANTIATE_TEST_SUITE_P(Drafters, SameAnswer,
                         ::testing::Values(Config{"ar", {"--draft", "none"}}, Config{"auto", {}},
                                           Config{"draft_model",
                                                  {"-md",
                                                   (models_dir() / "zoo-draft-f16.gguf").string(),
                                                   "--draft", "model", "--draft-max", "6"}},
                                           Config{"ngram", {"--draft", "ngram"}}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace augur::testing
