// Log-probabilities come from the target's distribution exactly as AR decoding computes it: a
// speculative server reports bitwise the numbers an AR server reports, streamed or not; the
// token list spells the completion text with consistent offsets; tokens that formed a stop
// string are not reported.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/serve_process.h"
#include "support/sse.h"

namespace augur::testing {
namespace {

using Json = nlohmann::json;

std::vector<std::string> server_args(const std::string& draft) {
  return {"-m", (models_dir() / "zoo-target-q8_0.gguf").string(), "-t", "2", "--draft", draft};
}

Json post(const ServeProcess& server, const Json& body) {
  auto client = server.client();
  const auto res = client.Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  return Json::parse(res->body);
}

// The completion's logprobs object, from a plain or a streamed request (chunks concatenated).
Json completion_logprobs(const ServeProcess& server, Json body, std::string* text) {
  if (!body.value("stream", false)) {
    const Json j = post(server, body);
    *text = j["choices"][0]["text"];
    return j["choices"][0]["logprobs"];
  }
  auto client = server.client();
  const auto res = client.Post("/v1/completions", body.dump(), "application/json");
  const SseStream s = parse_sse(res->body);
  EXPECT_TRUE(s.well_formed) << s.problem;
  Json all = {{"tokens", Json::array()},
              {"token_logprobs", Json::array()},
              {"top_logprobs", Json::array()},
              {"text_offset", Json::array()}};
  for (const auto& event : s.events) {
    const Json& lp = event["choices"][0]["logprobs"];
    if (lp.is_null()) continue;
    for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
      for (const auto& v : lp[key]) all[key].push_back(v);
    }
  }
  *text = s.text;
  return all;
}

const Json kBody = {
    {"prompt", "def fibonacci(n):\n"}, {"max_tokens", 40}, {"temperature", 0}, {"logprobs", 3}};

TEST(ServerLogprobs, SpeculativeEqualsArAndTokensSpellTheText) {
  ServeProcess ar(server_args("none"));
  ServeProcess spec(server_args("ngram"));  // ngram drafts real multi-token cycles here
  std::string ar_text, text, streamed_text;
  const Json reference = completion_logprobs(ar, kBody, &ar_text);
  Json streamed_body = kBody;
  streamed_body["stream"] = true;
  for (const ServeProcess* server : {&ar, &spec}) {
    const Json lp = completion_logprobs(*server, kBody, &text);
    const Json streamed = completion_logprobs(*server, streamed_body, &streamed_text);
    EXPECT_EQ(text, ar_text);
    EXPECT_EQ(streamed_text, ar_text);
    // Bitwise: JSON prints floats round-trip exactly.
    EXPECT_EQ(lp.dump(), reference.dump());
    EXPECT_EQ(streamed.dump(), reference.dump());
  }
  ASSERT_EQ(reference["tokens"].size(), 40u);
  std::string spelled;
  for (size_t i = 0; i < reference["tokens"].size(); ++i) {
    EXPECT_EQ(reference["text_offset"][i].get<size_t>(), spelled.size()) << "token " << i;
    spelled += reference["tokens"][i].get<std::string>();
    const float chosen = reference["token_logprobs"][i];
    EXPECT_LE(chosen, 0.0f);
    // Greedy: the chosen token is the most likely one, so it heads the alternatives.
    float best = -INFINITY;
    for (const auto& [token, value] : reference["top_logprobs"][i].items()) {
      best = std::max(best, value.get<float>());
    }
    EXPECT_EQ(reference["top_logprobs"][i].size(), 3u);
    EXPECT_EQ(best, chosen) << "token " << i;
  }
  EXPECT_EQ(spelled, ar_text);
  // The spec server really drafted.
  const Json stats = post(spec, kBody)["augur"];
  EXPECT_GT(stats["accepted"].get<int>(), 0) << stats;
}

TEST(ServerLogprobs, TokensOfAStopStringAreNotReported) {
  ServeProcess server(server_args("none"));
  std::string full, text;
  Json long_body = kBody;
  const Json all = completion_logprobs(server, long_body, &full);
  // Stop at the first newline after some text: the tokens up to it only.
  const size_t cut = full.find('\n', 4);
  ASSERT_NE(cut, std::string::npos) << full;
  Json body = kBody;
  body["stop"] = "\n";
  for (const bool stream : {false, true}) {
    body["stream"] = stream;
    const Json lp = completion_logprobs(server, body, &text);
    EXPECT_EQ(text, full.substr(0, full.find('\n')));
    ASSERT_FALSE(lp["tokens"].empty());
    for (size_t i = 0; i < lp["tokens"].size(); ++i) {
      EXPECT_LT(lp["text_offset"][i].get<size_t>(), text.size() + (text.empty() ? 1 : 0));
    }
    std::string spelled;
    for (const auto& t : lp["tokens"]) spelled += t.get<std::string>();
    EXPECT_EQ(spelled.substr(0, text.size()), text);
    EXPECT_LT(lp["tokens"].size(), all["tokens"].size());
  }
}

}  // namespace
}  // namespace augur::testing
