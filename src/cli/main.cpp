// augur's command line: the one place (besides the server) that catches errors, prints them
// and exits non-zero.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"augur: exact speculative decoding for GGUF models on CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "augur 0.1.0");
  int exit_code = augur::cli::kExitOk;
  augur::cli::add_run_command(app, exit_code);
  augur::cli::add_logits_command(app, exit_code);
  augur::cli::add_tokenize_command(app, exit_code);
  augur::cli::add_chat_template_command(app, exit_code);
  augur::cli::add_bench_command(app, exit_code);
  augur::cli::add_quantize_command(app, exit_code);
  augur::cli::add_serve_command(app, exit_code);
  // llama.cpp spells the draft model option "-md" and the server's sessions "-np"; CLI11 short
  // names are one character.
  std::vector<char*> args(argv, argv + argc);
  static char model_draft[] = "--model-draft";
  static char parallel[] = "--parallel";
  for (auto& arg : args) {
    if (std::strcmp(arg, "-md") == 0) arg = model_draft;
    if (std::strcmp(arg, "-np") == 0) arg = parallel;
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive as parse "errors" whose code is 0; CLI11 prints them.
    if (e.get_exit_code() == 0) return app.exit(e);
    // Every other parse error (unknown option or subcommand, missing option, bad number, value
    // out of range) is an invalid argument, whatever CLI11's own code for it (105..115). CLI11
    // reports an unknown subcommand as a missing one: name the word it did not know.
    const auto extra = app.remaining(/*recurse=*/true);
    const bool required = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr &&
                          std::string_view(e.what()).find("subcommand") != std::string_view::npos;
    const std::string unknown =
        required && !extra.empty() ? " (unknown subcommand '" + extra.front() + "')" : "";
    std::fprintf(stderr, "augur: invalid argument: %s%s\nRun with --help for more information.\n",
                 e.what(), unknown.c_str());
    return augur::cli::kExitInvalidArgument;
  } catch (const augur::Unsupported& e) {
    std::fprintf(stderr, "augur: unsupported: %s\n", e.what());
    return augur::cli::kExitUnsupported;
  } catch (const augur::InvalidArgument& e) {
    std::fprintf(stderr, "augur: invalid argument: %s\n", e.what());
    return augur::cli::kExitInvalidArgument;
  } catch (const std::exception& e) {
    // augur::Error (a bad file, a failed write) and anything else, std::bad_alloc included.
    std::fprintf(stderr, "augur: error: %s\n", e.what());
    return augur::cli::kExitError;
  }
  return exit_code;
}
