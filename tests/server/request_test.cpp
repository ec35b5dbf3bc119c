// Parsing OpenAI request bodies: every documented field read with its type checked, the
// llama.cpp defaults where the request is silent, and a 400-class InvalidArgument naming the
// field for anything wrong or unsupported.
#include "server/request.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace augur::testing {
namespace {

using server::Endpoint;
using Json = nlohmann::ordered_json;

server::CompletionRequest chat(const std::string& extra) {
  return server::parse_completion_request(
      Json::parse(R"({"messages":[{"role":"user","content":"hi"}])" + extra + "}"), Endpoint::Chat);
}

// The InvalidArgument message for a chat body with `extra` fields.
std::string chat_error(const std::string& extra) {
  try {
    (void)chat(extra);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(CompletionRequest, ReadsEveryField) {
  const auto r =
      chat(R"(,"model":"m","max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":5,"min_p":0.1,)"
           R"("seed":42,"stop":["a","b"],"stream":true,"stream_options":{"include_usage":true},)"
           R"("logprobs":true,"top_logprobs":3,"repeat_penalty":1.1,"ignore_eos":true,"n":1)");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampler.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampler.top_p, 0.9f);
  EXPECT_EQ(r.sampler.top_k, 5);
  EXPECT_FLOAT_EQ(r.sampler.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.sampler.repeat_penalty, 1.1f);
  EXPECT_EQ(r.seed, 42u);
  const auto penalties = chat(R"(,"presence_penalty":0.5,"frequency_penalty":-1)");
  EXPECT_FLOAT_EQ(penalties.sampler.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(penalties.sampler.frequency_penalty, -1.0f);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_TRUE(r.ignore_eos);
}

TEST(CompletionRequest, DefaultsAreLlamaCpps) {
  const auto r = chat("");
  const sampling::SamplerConfig defaults;
  EXPECT_EQ(r.max_tokens, -1);
  EXPECT_FLOAT_EQ(r.sampler.temperature, defaults.temperature);
  EXPECT_EQ(r.sampler.top_k, defaults.top_k);
  EXPECT_FALSE(r.seed.has_value());
  EXPECT_FALSE(r.stream);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_EQ(chat(R"(,"seed":-1)").seed, std::nullopt);  // llama-server's "random"
  EXPECT_EQ(chat(R"(,"max_completion_tokens":9)").max_tokens, 9);
  EXPECT_EQ(chat(R"(,"stop":"x")").stop, std::vector<std::string>{"x"});
  EXPECT_EQ(chat(R"(,"max_tokens":null)").max_tokens, -1);
}

TEST(CompletionRequest, RefusesWhatItCannotHonour) {
  const std::pair<std::string, std::string> cases[] = {
      {R"(,"n":2)", "'n'"},
      {R"(,"temperature":"hot")", "'temperature' must be a number"},
      {R"(,"temperature":-1)", "temperature"},
      {R"(,"top_p":0)", "top_p"},
      {R"(,"max_tokens":1.5)", "'max_tokens' must be an integer"},
      {R"(,"max_tokens":-5)", "'max_tokens'"},
      {R"(,"top_k":-1)", "'top_k'"},
      {R"(,"stop":[1])", "'stop'"},
      {R"(,"stream":"yes")", "'stream'"},
      {R"(,"stream_options":{"include_usage":true})", "'stream_options'"},
      {R"(,"top_logprobs":3)", "'top_logprobs' needs 'logprobs'"},
      {R"(,"logprobs":true,"top_logprobs":21)", "'top_logprobs'"},
      {R"(,"presence_penalty":2.5)", "'presence_penalty' = 2.5 is out of range"},
      {R"(,"frequency_penalty":"x")", "'frequency_penalty' must be a number"},
      {R"(,"logit_bias":{"5":1})", "'logit_bias'"},
      {R"(,"response_format":{"type":"json_object"})", "'response_format'"},
      {R"(,"seed":"x")", "'seed'"},
      {R"(,"model":3)", "'model'"},
  };
  for (const auto& [extra, expected] : cases) {
    EXPECT_NE(chat_error(extra).find(expected), std::string::npos)
        << extra << " gave: " << chat_error(extra);
  }
  EXPECT_EQ(chat_error(R"(,"presence_penalty":0,"frequency_penalty":0)"), "(accepted)");
}

TEST(CompletionRequest, ChecksMessages) {
  const auto error = [](const std::string& messages) {
    try {
      (void)server::parse_completion_request(Json::parse(R"({"messages":)" + messages + "}"),
                                             Endpoint::Chat);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(error("[]").find("empty"), std::string::npos);
  EXPECT_NE(error(R"("hi")").find("list"), std::string::npos);
  EXPECT_NE(error(R"([{"role":"wizard","content":"x"}])").find("'wizard' is unknown"),
            std::string::npos);
  EXPECT_NE(error(R"([{"content":"x"}])").find("role"), std::string::npos);
  EXPECT_NE(error(R"([{"role":"user"}])").find("content is missing"), std::string::npos);
  EXPECT_NE(error(R"([{"role":"user","content":5}])").find("content must be a string"),
            std::string::npos);
  EXPECT_NE(error(R"([{"role":"user","content":[{"type":"image_url","image_url":{}}]}])")
                .find("\"text\""),
            std::string::npos);
  // Text parts are joined; "developer" is the newer name of "system".
  const auto r = server::parse_completion_request(
      Json::parse(
          R"({"messages":[{"role":"developer","content":"be brief"},)"
          R"({"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})"),
      Endpoint::Chat);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "ab");
}

TEST(CompletionRequest, CompletionsPromptForms) {
  const auto parse = [](const std::string& prompt) {
    return server::parse_completion_request(Json::parse(R"({"prompt":)" + prompt + "}"),
                                            Endpoint::Completion);
  };
  EXPECT_EQ(parse(R"("abc")").prompt, "abc");
  EXPECT_EQ(parse(R"(["abc"])").prompt, "abc");
  EXPECT_EQ(parse("[1,2,3]").prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse("[[4,5]]").prompt_ids, (std::vector<int32_t>{4, 5}));
  EXPECT_THROW((void)parse(R"(["a","b"])"), InvalidArgument);
  EXPECT_THROW((void)parse("[-1]"), InvalidArgument);
  EXPECT_THROW((void)parse("5"), InvalidArgument);
  EXPECT_THROW((void)server::parse_completion_request(Json::parse("{}"), Endpoint::Completion),
               InvalidArgument);
  // Completions' logprobs is a count of alternatives.
  const auto r = server::parse_completion_request(Json::parse(R"({"prompt":"x","logprobs":2})"),
                                                  Endpoint::Completion);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
}

}  // namespace
}  // namespace augur::testing
