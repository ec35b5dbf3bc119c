// `augur quantize IN.gguf OUT.gguf TYPE`: writes a copy of a model with its weight matrices
// quantized to Q8_0, Q4_0, Q5_0, Q4_K, Q5_K or Q6_K, or as the Q4_K_M / Q5_K_M mixes (the rules are
// model/quantize_model.h's), reporting progress
// on stderr: redrawn in place on a terminal, one line per tensor otherwise.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "gguf/file.h"
#include "kernels/thread_pool.h"
#include "model/quantize_model.h"

namespace augur::cli {
namespace {

struct QuantizeOptions {
  std::string input, output, type;
  int threads = 0;  // 0: all hardware threads
};

class ProgressLine {
 public:
  ProgressLine() : tty_(isatty(STDERR_FILENO) != 0) {}
  void operator()(const model::QuantizeProgress& p) {
    if (!tty_ && !p.tensor_done) return;
    const std::string what =
        p.from == p.to ? fmt::format("{} (copied)", gguf::type_name(p.from))
                       : fmt::format("{} -> {}", gguf::type_name(p.from), gguf::type_name(p.to));
    const std::string line = fmt::format("quantizing {} [{}/{}] {:3d}% {}", p.tensor, p.index,
                                         p.count, static_cast<int>(p.fraction * 100), what);
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      if (p.tensor_done && p.index == p.count) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

 private:
  bool tty_;
};

int run(const QuantizeOptions& opt) {
  const auto target = model::parse_quantize_target(opt.type);
  const auto input = gguf::File::open(opt.input);
  kernels::ThreadPool pool(
      opt.threads > 0 ? opt.threads
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  ProgressLine progress;
  const auto summary =
      model::quantize_model(*input, opt.output, target, pool,
                            [&progress](const model::QuantizeProgress& p) { progress(p); });
  constexpr double kMiB = 1024.0 * 1024.0;
  std::fprintf(stderr,
               "augur quantize: wrote %s (%s, general.file_type %u): %zu tensors converted (%zu by "
               "fallback), %zu copied; tensor data %.2f MiB -> %.2f MiB\n",
               opt.output.c_str(), target.name().c_str(), model::llama_file_type(target),
               summary.n_converted, summary.n_fallback, summary.n_copied,
               static_cast<double>(summary.bytes_in) / kMiB,
               static_cast<double>(summary.bytes_out) / kMiB);
  return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<QuantizeOptions>();
  auto* cmd =
      app.add_subcommand("quantize",
                         "write a copy of a GGUF model with its weight matrices quantized (like "
                         "llama-quantize: --pure for a single type, its rules for Q4_K_M/Q5_K_M)");
  cmd->add_option("input", opt->input, "source GGUF model (F32/F16/BF16 weights)")->required();
  cmd->add_option("output", opt->output, "GGUF file to write (never the input)")->required();
  cmd->add_option("type", opt->type,
                  "target: Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K (every weight that type) or Q4_K_M, "
                  "Q5_K_M (llama-quantize's mixes)")
      ->required();
  cmd->add_option("-t,--threads", opt->threads, "worker threads (default: all hardware threads)")
      ->check(CLI::Range(1, 1024));
  cmd->callback([opt, &exit_code] { exit_code = run(*opt); });
}

}  // namespace augur::cli
