// `augur tokenize`: print token ids, space-separated. Needs only tokenizer metadata, so it
// works on vocab-only GGUF files too.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/prompt_input.h"
#include "common/error.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace augur::cli {
namespace {

struct TokenizeOptions {
  std::string model_path;
  PromptInput prompt;
  bool no_bos = false;
  bool special = false;
};

int run(const TokenizeOptions& opt) {
  const auto file = gguf::File::open(opt.model_path);
  const auto tok = tokenizer::Tokenizer::from_gguf(*file);
  if (!opt.prompt.given()) throw InvalidArgument("no text: give -p TEXT or -f FILE");
  const auto ids = tok->encode(opt.prompt.read_text(), /*add_special=*/!opt.no_bos, opt.special);
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<TokenizeOptions>();
  auto* cmd = app.add_subcommand("tokenize", "print the token ids of a text, space-separated");
  cmd->add_option("-m,--model", opt->model_path, "GGUF file (a vocab-only file is enough)")
      ->required();
  opt->prompt.add_options(*cmd, /*with_ids=*/false);
  cmd->add_flag("--no-bos", opt->no_bos, "do not add BOS/EOS even if the model asks for them");
  cmd->add_flag("--special", opt->special, "parse control-token texts such as <s> as tokens");
  cmd->callback([opt, &exit_code] { exit_code = run(*opt); });
}

}  // namespace augur::cli
