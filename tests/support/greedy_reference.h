// What a server test expects a greedy request to answer: `augur run --temp 0 --draft none` (plain
// autoregressive decoding) on the same prompt text; for chat, on the prompt the server renders
// from the messages (POST /apply-template), so the expectation follows the template in use.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "support/run_command.h"
#include "support/serve_process.h"
#include "test_paths.h"

namespace augur::testing {

struct GreedyText {
  std::string text;
  std::string finish_reason;  // OpenAI's: "length", or "stop" at an end-of-generation token
};

// `augur run -f PROMPT -n n_tokens --temp 0 --draft none --json -t threads`; the prompt goes
// through a file so its bytes arrive exactly.
inline GreedyText augur_run_greedy(const std::filesystem::path& model, const std::string& prompt,
                                   int n_tokens, int threads = 1) {
  const auto prompt_path = temp_path("prompt");
  std::ofstream(prompt_path, std::ios::binary) << prompt;
  const auto r = run_command(quote(augur_bin()) + " run -m " + quote(model) + " -f " +
                             quote(prompt_path) + " -n " + std::to_string(n_tokens) +
                             " --temp 0 --draft none --json -t " + std::to_string(threads));
  std::filesystem::remove(prompt_path);
  if (r.exit_code != 0) {
    throw std::runtime_error("augur run failed (" + std::to_string(r.exit_code) + "):\n" + r.err);
  }
  const auto json = nlohmann::json::parse(r.out);
  const std::string stop = json.at("stop");
  return {json.at("text"), stop == "length" ? "length" : "stop"};
}

// The prompt text the server renders for `messages` (its chat template, or ChatML).
inline std::string rendered_chat_prompt(const ServeProcess& server, const nlohmann::json& messages,
                                        const std::string& api_key = "") {
  auto client = server.client();
  const nlohmann::json body = {{"messages", messages}};
  httplib::Headers headers;
  if (!api_key.empty()) headers.emplace("Authorization", "Bearer " + api_key);
  const auto res = client.Post("/apply-template", headers, body.dump(), "application/json");
  if (!res || res->status != 200) {
    throw std::runtime_error("POST /apply-template failed: " + (res ? res->body : "no answer"));
  }
  return nlohmann::json::parse(res->body).at("prompt");
}

}  // namespace augur::testing
