// augur's command line: the one place (besides the server) that catches errors, prints them
// and exits non-zero.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "cli/commands.h"
#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"augur: exact speculative decoding for GGUF models on CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "augur 0.1.0");
  int exit_code = 0;
  augur::cli::add_run_command(app, exit_code);
  augur::cli::add_logits_command(app, exit_code);
  augur::cli::add_tokenize_command(app, exit_code);
  augur::cli::add_bench_command(app, exit_code);
  augur::cli::add_quantize_command(app, exit_code);
  // llama.cpp spells the draft model option "-md"; CLI11 short names are one character.
  std::vector<char*> args(argv, argv + argc);
  static char model_draft[] = "--model-draft";
  for (auto& arg : args) {
    if (std::strcmp(arg, "-md") == 0) arg = model_draft;
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const augur::Unsupported& e) {
    std::fprintf(stderr, "augur: unsupported: %s\n", e.what());
    return 3;
  } catch (const augur::InvalidArgument& e) {
    std::fprintf(stderr, "augur: invalid argument: %s\n", e.what());
    return 2;
  } catch (const augur::Error& e) {
    std::fprintf(stderr, "augur: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "augur: error: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
