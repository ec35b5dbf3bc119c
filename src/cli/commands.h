// The CLI's subcommands. Each registers its options on `app` and sets `exit_code` when run.
#pragma once

#include <CLI/CLI.hpp>

namespace augur::cli {

void add_run_command(CLI::App& app, int& exit_code);
void add_logits_command(CLI::App& app, int& exit_code);
void add_tokenize_command(CLI::App& app, int& exit_code);
void add_chat_template_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_quantize_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
// `bench roofline`, registered on the `bench` subcommand by add_bench_command.
void add_bench_roofline_subcommand(CLI::App& bench, int& exit_code);
// `bench serve`, registered on the `bench` subcommand by add_bench_command.
void add_bench_serve_subcommand(CLI::App& bench, int& exit_code);

}  // namespace augur::cli
