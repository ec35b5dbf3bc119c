// `augur logits`: float32 logits of EVERY prompt position, row-major [n_positions, n_vocab],
// with the prompt evaluated in ubatches on an empty cache.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>

#include "cache/model_cache.h"
#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/prompt_input.h"
#include "common/error.h"
#include "model/evaluator.h"
#include "tokenizer/tokenizer.h"

namespace augur::cli {
namespace {

struct LogitsOptions {
  RuntimeOptions runtime;
  PromptInput prompt;
  std::string out;
};

int run(const LogitsOptions& opt) {
  auto model = load_model_with_progress(opt.runtime.model_path);
  const int64_t n_vocab = model->hparams().n_vocab;
  if (!opt.prompt.given())
    throw InvalidArgument("no prompt: give --prompt-ids, -p TEXT or -f FILE");
  std::vector<int32_t> prompt;
  if (opt.prompt.has_ids()) {
    prompt = parse_token_ids(opt.prompt.ids, n_vocab);
  } else {
    prompt = prompt_tokens(opt.prompt, *tokenizer::Tokenizer::from_gguf(model->file()), n_vocab);
  }
  const int64_t n = static_cast<int64_t>(prompt.size());
  const int64_t n_ctx = std::max(n, opt.runtime.n_ctx);
  kernels::ThreadPool pool(opt.runtime.resolved_threads());
  cache::ModelCache cache(*model, {.capacity = n_ctx, .max_batch = opt.runtime.ubatch});
  model::Evaluator eval(*model, pool, opt.runtime.ubatch, n_ctx);

  std::ofstream out(opt.out, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(fmt::format("cannot write '{}'", opt.out));
  // Evaluate ubatch by ubatch so the logits buffer never scales with the whole prompt.
  std::vector<float> logits(static_cast<size_t>(opt.runtime.ubatch * n_vocab));
  std::vector<int32_t> positions, rows;
  for (int64_t start = 0; start < n; start += opt.runtime.ubatch) {
    const int64_t len = std::min(opt.runtime.ubatch, n - start);
    positions.resize(static_cast<size_t>(len));
    rows.resize(static_cast<size_t>(len));
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(start));
    std::iota(rows.begin(), rows.end(), 0);
    eval.forward(std::span<const int32_t>(prompt).subspan(static_cast<size_t>(start),
                                                          static_cast<size_t>(len)),
                 positions, rows, cache.memory(), logits.data());
    cache.commit(len);
    out.write(reinterpret_cast<const char*>(logits.data()),
              static_cast<std::streamsize>(len * n_vocab * sizeof(float)));
  }
  out.close();
  if (!out) throw Error(fmt::format("writing '{}' failed", opt.out));
  std::fprintf(stderr, "wrote %lld x %lld float32 logits to %s\n", static_cast<long long>(n),
               static_cast<long long>(n_vocab), opt.out.c_str());
  return 0;
}

}  // namespace

void add_logits_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<LogitsOptions>();
  auto* cmd = app.add_subcommand(
      "logits", "write float32 logits of every prompt position, row-major [n_positions, n_vocab]");
  opt->runtime.add_options(*cmd);
  opt->prompt.add_options(*cmd, /*with_ids=*/true);
  cmd->add_option("--out,-o", opt->out, "output file")->required();
  cmd->callback([opt, &exit_code] { exit_code = run(*opt); });
}

}  // namespace augur::cli
