// `augur chat-template`: renders a chat template over a conversation and prints the prompt
// exactly (no newline added). The template comes from a GGUF file's tokenizer.chat_template
// (ChatML, with a warning, when the file has none) or from a file; BOS/EOS texts come from the
// model's tokenizer unless given.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "common/error.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace augur::cli {
namespace {

constexpr std::string_view kTemplateKey = "tokenizer.chat_template";

struct ChatTemplateOptions {
  std::string model_path;
  std::string template_path;
  std::string messages_path;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  bool add_generation_prompt = false;
};

std::string read_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string(what) + " '" + path + "': cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The variables of --messages: an array is the messages; an object is all the variables.
nlohmann::ordered_json read_context(const std::string& path) {
  nlohmann::ordered_json json;
  try {
    json = nlohmann::ordered_json::parse(read_file(path, "messages file"));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("messages file '" + path + "': not JSON: " + e.what());
  }
  if (json.is_array()) return nlohmann::ordered_json{{"messages", std::move(json)}};
  if (!json.is_object() || !json.contains("messages") || !json["messages"].is_array()) {
    throw FormatError("messages file '" + path +
                      "': expected an array of messages or an object with a \"messages\" array");
  }
  return json;
}

struct TemplateSource {
  std::string text;
  std::string name;  // for error messages
  std::string bos;
  std::string eos;
};

TemplateSource template_from_model(const std::string& path) {
  const auto file = gguf::File::open(path);
  const auto tok = tokenizer::Tokenizer::from_gguf(*file);
  TemplateSource source;
  source.name = "'" + path + "' " + std::string(kTemplateKey);
  if (const auto text = file->get_string_opt(kTemplateKey)) {
    source.text = std::string(*text);
  } else {
    std::fprintf(stderr, "augur: warning: '%s' has no %s; using ChatML\n", path.c_str(),
                 std::string(kTemplateKey).c_str());
    source.text = std::string(chat::chatml_template());
    source.name = "ChatML fallback";
  }
  if (tok->bos() >= 0) source.bos = std::string(tok->token_text(tok->bos()));
  if (tok->eos() >= 0) source.eos = std::string(tok->token_text(tok->eos()));
  return source;
}

int run(const ChatTemplateOptions& opt) {
  if (opt.model_path.empty() == opt.template_path.empty()) {
    throw InvalidArgument("give exactly one of -m MODEL and --chat-template FILE");
  }
  TemplateSource source;
  if (!opt.model_path.empty()) {
    source = template_from_model(opt.model_path);
  } else {
    source.text = read_file(opt.template_path, "chat template");
    source.name = "'" + opt.template_path + "'";
  }
  nlohmann::ordered_json context = read_context(opt.messages_path);
  context["add_generation_prompt"] = opt.add_generation_prompt;
  context["bos_token"] = opt.bos_token.value_or(source.bos);
  context["eos_token"] = opt.eos_token.value_or(source.eos);

  std::string prompt;
  try {
    prompt =
        chat::ChatTemplate::parse(source.text).render(context, std::chrono::system_clock::now());
  } catch (const chat::TemplateRaised& e) {
    throw InvalidArgument("chat template refused the messages: " + std::string(e.what()));
  } catch (const Unsupported& e) {
    throw Unsupported("chat template " + source.name + ": " + e.what());
  } catch (const FormatError& e) {
    throw FormatError("chat template " + source.name + ": " + e.what());
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("chat template " + source.name + ": " + e.what());
  }
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

void add_chat_template_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<ChatTemplateOptions>();
  auto* cmd = app.add_subcommand("chat-template",
                                 "render a chat template over a conversation and print the prompt");
  auto* model = cmd->add_option("-m,--model", opt->model_path,
                                "GGUF file whose tokenizer.chat_template to use");
  auto* file = cmd->add_option("--chat-template", opt->template_path, "Jinja template file");
  model->excludes(file);
  cmd->add_option("--messages", opt->messages_path,
                  "JSON file: an array of messages, or an object with \"messages\" and other "
                  "variables such as \"tools\"")
      ->required();
  cmd->add_option("--bos-token", opt->bos_token, "bos_token text (default: the model's)");
  cmd->add_option("--eos-token", opt->eos_token, "eos_token text (default: the model's)");
  cmd->add_flag("--add-generation-prompt", opt->add_generation_prompt,
                "end with the header of the assistant's turn");
  cmd->callback([opt, &exit_code] { exit_code = run(*opt); });
}

}  // namespace augur::cli
