// augur serve through the curl binary (`curl -sN`, as a person would try it): the server-sent
// event stream is parsed strictly (every event `data: <json>\n\n`, the last `data: [DONE]\n\n`,
// nothing else), and the streamed deltas, the non-streamed answer and `augur run --temp 0` all
// give the same text, for chat and for completions.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/greedy_reference.h"
#include "support/serve_process.h"

namespace augur::testing {
namespace {

using Json = nlohmann::json;

constexpr int kMaxTokens = 24;

// The events of a whole SSE body, or the first way it breaks the format (`error` non-empty).
struct SseStream {
  std::vector<Json> events;  // the JSON payloads, [DONE] excluded
  std::string error;
};

SseStream parse_sse_strict(const std::string& body) {
  SseStream out;
  const std::string prefix = "data: ";
  size_t at = 0;
  bool done = false;
  while (at < body.size()) {
    if (done) {
      out.error = "bytes after data: [DONE] at offset " + std::to_string(at);
      return out;
    }
    if (body.compare(at, prefix.size(), prefix) != 0) {
      out.error = "event at offset " + std::to_string(at) + " does not start with 'data: '";
      return out;
    }
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) {
      out.error = "event at offset " + std::to_string(at) + " is not ended by a blank line";
      return out;
    }
    const std::string payload = body.substr(at + prefix.size(), end - at - prefix.size());
    if (payload.find_first_of("\r\n") != std::string::npos) {
      out.error = "event at offset " + std::to_string(at) + " spans lines: " + payload;
      return out;
    }
    if (payload == "[DONE]") {
      done = true;
    } else {
      Json event = Json::parse(payload, nullptr, /*allow_exceptions=*/false);
      if (!event.is_object()) {
        out.error = "event payload is not a JSON object: " + payload;
        return out;
      }
      out.events.push_back(std::move(event));
    }
    at = end + 2;
  }
  if (!done) out.error = "the stream does not end with data: [DONE]";
  return out;
}

struct CurlReply {
  int http_status = 0;
  std::string headers;
  std::string body;
};

CurlReply curl_post(const std::string& url, const Json& body) {
  const auto request = temp_path("curl-request.json"), reply = temp_path("curl-body"),
             headers = temp_path("curl-headers");
  std::ofstream(request) << body.dump();
  const auto r = run_command(
      "curl -sN -X POST -H 'Content-Type: application/json' --data-binary @" + quote(request) +
      " -D " + quote(headers) + " -o " + quote(reply) + " -w '%{http_code}' " + url);
  CurlReply out;
  out.headers = slurp(headers);
  out.body = slurp(reply);
  for (const auto& p : {request, reply, headers}) std::filesystem::remove(p);
  if (r.exit_code != 0) throw std::runtime_error("curl failed: " + r.err);
  out.http_status = std::stoi(r.out);
  return out;
}

std::filesystem::path target_model() {
  return models_dir() / "zoo-target-q8_0.gguf";
}

// The streamed text of one endpoint's chunks, checking each chunk's shape on the way.
std::string streamed_text(const SseStream& stream, bool chat) {
  std::string text;
  for (const auto& event : stream.events) {
    EXPECT_EQ(event.value("object", ""), chat ? "chat.completion.chunk" : "text_completion");
    const auto& choices = event.at("choices");
    if (choices.empty()) continue;  // a usage chunk
    const auto& choice = choices.at(0);
    if (chat) {
      text += choice.at("delta").value("content", "");
    } else {
      text += choice.at("text").get<std::string>();
    }
  }
  return text;
}

void expect_stream_matches(const ServeProcess& server, bool chat, Json request,
                           const GreedyText& expected) {
  const std::string url = server.url() + (chat ? "/v1/chat/completions" : "/v1/completions");
  request["max_tokens"] = kMaxTokens;
  request["temperature"] = 0;

  request["stream"] = false;
  const auto plain = curl_post(url, request);
  ASSERT_EQ(plain.http_status, 200) << plain.body;
  const auto answer = Json::parse(plain.body);
  const auto& choice = answer.at("choices").at(0);
  const std::string text = chat ? choice.at("message").at("content").get<std::string>()
                                : choice.at("text").get<std::string>();
  EXPECT_EQ(text, expected.text);
  EXPECT_EQ(choice.at("finish_reason"), expected.finish_reason);

  request["stream"] = true;
  request["stream_options"] = {{"include_usage", true}};
  const auto streamed = curl_post(url, request);
  ASSERT_EQ(streamed.http_status, 200) << streamed.body;
  EXPECT_NE(streamed.headers.find("text/event-stream"), std::string::npos) << streamed.headers;
  const SseStream stream = parse_sse_strict(streamed.body);
  ASSERT_EQ(stream.error, "") << streamed.body;
  ASSERT_GE(stream.events.size(), 4u) << streamed.body;
  EXPECT_EQ(streamed_text(stream, chat), text) << streamed.body;
  // The last event is the usage chunk; the one before carries finish_reason and augur's stats.
  const Json& usage = stream.events.back();
  EXPECT_TRUE(usage.at("choices").empty()) << usage;
  EXPECT_EQ(usage.at("usage").at("completion_tokens"), answer.at("usage").at("completion_tokens"));
  const Json& final_chunk = stream.events[stream.events.size() - 2];
  EXPECT_EQ(final_chunk.at("choices").at(0).at("finish_reason"), expected.finish_reason);
  EXPECT_TRUE(final_chunk.contains("augur")) << final_chunk;
}

TEST(CurlSse, ChatAndCompletionStreamsAreStrictSseAndEqualRun) {
  ServeProcess server({"-m", target_model().string(), "-t", "1", "--parallel", "1"});
  const Json messages = Json::array({{{"role", "user"}, {"content", "def add(a, b):"}}});
  const auto chat_expected =
      augur_run_greedy(target_model(), rendered_chat_prompt(server, messages), kMaxTokens);
  expect_stream_matches(server, /*chat=*/true, {{"messages", messages}}, chat_expected);

  const std::string prompt = "import numpy as np\n";
  expect_stream_matches(server, /*chat=*/false, {{"prompt", prompt}},
                        augur_run_greedy(target_model(), prompt, kMaxTokens));
}

// The strict parser sees each planted defect.
TEST(CurlSse, StrictParserRejectsMalformedStreams) {
  const std::string ok = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
  const auto parsed = parse_sse_strict(ok);
  EXPECT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.events.size(), 2u);
  for (const std::string bad : {
           "data: {\"a\":1}\n\n",                              // no [DONE]
           "data: {\"a\":1}\ndata: [DONE]\n\n",                // one newline between events
           "data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n",      // CRLF
           "data:{\"a\":1}\n\ndata: [DONE]\n\n",               // no space after the colon
           "event: x\ndata: {\"a\":1}\n\ndata: [DONE]\n\n",    // another field
           "data: {\"a\":\n\ndata: [DONE]\n\n",                // not JSON
           "data: {\"a\":1}\n\ndata: [DONE]\n\ndata: {}\n\n",  // after [DONE]
           "data: {\"a\":1}\n\ndata: [DONE]\n",                // [DONE] not ended
           ": comment\n\ndata: [DONE]\n\n",                    // a comment line
       }) {
    EXPECT_NE(parse_sse_strict(bad).error, "") << bad;
  }
}

}  // namespace
}  // namespace augur::testing
