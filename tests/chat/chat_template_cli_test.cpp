// `augur chat-template` end to end through the real binary: byte-exact output against
// cases.jsonl, the template's refusal on stderr, the GGUF path (a file with a template and one
// without, which falls back to ChatML with a warning) and an unsupported construct.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_template.h"
#include "gguf/file.h"
#include "support/run_command.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace augur {
namespace {

using nlohmann::ordered_json;
using testing::quote;
using testing::run_command;

std::string augur() {
  return quote(testing::augur_bin());
}
std::filesystem::path templates_dir() {
  return testing::shared_dir() / "chat-templates";
}

// The first case of cases.jsonl for `template_name` and `case_name`, with or without the
// generation prompt.
ordered_json find_case(const std::string& template_name, const std::string& case_name,
                       bool add_generation_prompt) {
  std::ifstream in(templates_dir() / "cases.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto c = ordered_json::parse(line);
    if (c["template"] == template_name && c["case"] == case_name &&
        c["add_generation_prompt"] == add_generation_prompt) {
      return c;
    }
  }
  ADD_FAILURE() << "no case " << template_name << " " << case_name;
  return {};
}

// A temporary file that removes itself.
struct TempFile {
  explicit TempFile(const std::string& stem, const std::string& text)
      : path(testing::temp_path(stem)) {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::filesystem::path path;
};

TEST(CliChatTemplate, OutputEqualsReferenceRenderingByteForByte) {
  for (const char* name : {"meta-llama-Llama-3.1-8B-Instruct", "Qwen-Qwen3-0.6B",
                           "mistralai-Mistral-Nemo-Instruct-2407"}) {
    const auto c = find_case(name, "unicode", true);
    const TempFile messages("messages.json", c["messages"].dump());
    const auto r =
        run_command(augur() + " chat-template --chat-template " +
                    quote(templates_dir() / (std::string(name) + ".jinja")) + " --messages " +
                    quote(messages.path) + " --add-generation-prompt --bos-token " +
                    quote(c["bos_token"].get<std::string>()) + " --eos-token " +
                    quote(c["eos_token"].get<std::string>()));
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>()) << name;
  }
}

TEST(CliChatTemplate, MessagesObjectCarriesExtraVariables) {
  // Without --add-generation-prompt, and the messages inside an object with other variables.
  const auto c = find_case("Qwen-Qwen2.5-7B-Instruct", "system_multi", false);
  ordered_json variables = {{"messages", c["messages"]}, {"unused_extra", 1}};
  const TempFile messages("messages.json", variables.dump());
  const auto r =
      run_command(augur() + " chat-template --chat-template " +
                  quote(templates_dir() / "Qwen-Qwen2.5-7B-Instruct.jinja") + " --messages " +
                  quote(messages.path) + " --bos-token '' --eos-token " +
                  quote(c["eos_token"].get<std::string>()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, c["expected"].get<std::string>());
}

TEST(CliChatTemplate, TemplateRefusalExitsNonZeroWithItsMessage) {
  const auto c = find_case("google-gemma-2-2b-it", "system_user", true);
  ASSERT_TRUE(c.contains("expected_error"));
  const TempFile messages("messages.json", c["messages"].dump());
  const auto r = run_command(augur() + " chat-template --chat-template " +
                             quote(templates_dir() / "google-gemma-2-2b-it.jinja") +
                             " --messages " + quote(messages.path) + " --add-generation-prompt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(c["expected_error"].get<std::string>()), std::string::npos) << r.err;
}

TEST(CliChatTemplate, UnsupportedConstructExitsNonZeroNamingItAndItsLine) {
  const TempFile tmpl("template.jinja",
                      "{% for m in messages %}\n{{ m.content | wordwrap }}\n{% endfor %}");
  const TempFile messages("messages.json", R"([{"role": "user", "content": "hi"}])");
  const auto r = run_command(augur() + " chat-template --chat-template " + quote(tmpl.path) +
                             " --messages " + quote(messages.path));
  EXPECT_EQ(r.exit_code, 3) << r.err;  // kExitUnsupported
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("line 2: unsupported filter 'wordwrap'"), std::string::npos) << r.err;
}

TEST(CliChatTemplate, ModelTemplateAndTokensComeFromTheGguf) {
  // The Qwen2 vocabulary fixture ships a chat template; the binary must render it with the
  // file's own BOS/EOS texts, as the library does.
  const auto model = testing::fixtures_dir() / "tokenizers" / "ggml-vocab-qwen2.gguf";
  const auto file = gguf::File::open(model);
  const auto source = file->get_string_opt("tokenizer.chat_template");
  ASSERT_TRUE(source.has_value());
  const auto tok = tokenizer::Tokenizer::from_gguf(*file);
  const ordered_json messages = ordered_json::parse(
      R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])");
  ordered_json context = {
      {"messages", messages},
      {"add_generation_prompt", true},
      {"bos_token", tok->bos() >= 0 ? std::string(tok->token_text(tok->bos())) : ""},
      {"eos_token", tok->eos() >= 0 ? std::string(tok->token_text(tok->eos())) : ""}};
  const std::string expected =
      chat::ChatTemplate::parse(*source).render(context, std::chrono::system_clock::now());
  EXPECT_NE(expected.find("<|im_start|>user\nhi<|im_end|>"), std::string::npos) << expected;

  const TempFile messages_file("messages.json", messages.dump());
  const auto r = run_command(augur() + " chat-template -m " + quote(model) + " --messages " +
                             quote(messages_file.path) + " --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(r.err, "");
}

TEST(CliChatTemplate, ModelWithoutTemplateFallsBackToChatMlWithAWarning) {
  const auto model = testing::fixtures_dir() / "tiny-llama.gguf";
  ASSERT_FALSE(gguf::File::open(model)->has("tokenizer.chat_template"));
  const TempFile messages("messages.json", R"([{"role": "user", "content": "hi"}])");
  const auto r = run_command(augur() + " chat-template -m " + quote(model) + " --messages " +
                             quote(messages.path) + " --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ChatML"), std::string::npos) << r.err;
}

TEST(CliChatTemplate, NeedsExactlyOneTemplateSource) {
  const TempFile messages("messages.json", "[]");
  const auto none = run_command(augur() + " chat-template --messages " + quote(messages.path));
  EXPECT_EQ(none.exit_code, 2) << none.err;
  const auto bad_json = TempFile("messages.json", "{not json");
  const auto r = run_command(augur() + " chat-template --chat-template " +
                             quote(templates_dir() / "Qwen-Qwen3-0.6B.jinja") + " --messages " +
                             quote(bad_json.path));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("not JSON"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace augur
